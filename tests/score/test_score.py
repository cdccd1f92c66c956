"""Score arithmetic against hand-computed values (no model, no files)."""
import pytest

from plugins.score.tally import (Record, cell, mcnemar_exact, newcombe_paired, outcome_of, paired_conditions,
                                 paired_full_vs_source, score_by_pass, score_pass, wilson)


def rec(family, condition, order, outcome, *, expected="A", chosen=None, strict=None, pass_index=1, measured=True):
    if chosen is None and outcome in ("correct", "wrong"):
        chosen = expected if outcome == "correct" else "B"
    return Record(item=f"{family}/{condition}/{order}", family=family, condition=condition, order=order,
                  pass_index=pass_index, expected=expected, chosen=chosen,
                  strict=chosen if strict is None else strict, outcome=outcome, key_measured=measured, key="fx")


@pytest.mark.parametrize("k,n,low,high", [
    # Wilson (z = 1.96): 0/30 -> [0, z^2/(n+z^2)], 30/30 -> [n/(n+z^2), 1]; 15/30 symmetric about 0.5.
    (0, 30, 0.0, 0.11351),
    (30, 30, 0.88649, 1.0),
    (15, 30, 0.33154, 0.66846),  # centre 0.5, half-width 0.16846 by hand
    (1, 10, 0.01788, 0.40415),
])
def test_wilson_known_values(k, n, low, high):
    iv = wilson(k, n)
    assert iv.low == pytest.approx(low, abs=1e-5)
    assert iv.high == pytest.approx(high, abs=1e-5)


def test_wilson_closed_forms_and_edges():
    z2 = 1.959963984540054 ** 2
    assert wilson(0, 30).high == pytest.approx(z2 / (30 + z2))
    assert wilson(30, 30).low == pytest.approx(30 / (30 + z2))
    assert wilson(0, 0) is None
    with pytest.raises(ValueError, match="0 <= correct <= n"):
        wilson(31, 30)


@pytest.mark.parametrize("b,c,p", [
    (0, 0, 1.0),
    (0, 5, 2 / 32),  # 2 * C(5,0) / 2^5
    (5, 0, 2 / 32),
    (1, 9, 2 * 11 / 1024),  # 2 * (C(10,0) + C(10,1)) / 2^10
    (2, 8, 2 * 56 / 1024),  # 2 * (1 + 10 + 45) / 2^10
    (3, 3, 1.0),  # capped at 1
    (0, 1, 1.0),
])
def test_mcnemar_exact(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)


def test_mcnemar_rejects_negative_counts():
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_outcome_of():
    assert outcome_of("A", "A") == "correct"
    assert outcome_of("A", "C") == "wrong"
    assert outcome_of("A", None) == "no-letter"


def test_cell_excludes_omitted_from_denominator_and_counts_misses():
    rs = [rec("f", "full", "forward", "correct"), rec("f", "full", "mirror", "no-letter"),
          rec("g", "full", "forward", "omitted"), rec("g", "full", "mirror", "wrong"),
          rec("h", "full", "forward", "correct", strict=None, chosen="A")]
    # the last one: scorer read A, the plain regex read nothing
    rs[-1] = Record(**{**rs[-1].__dict__, "strict": None})
    c = cell(rs)
    assert (c.correct, c.n, c.no_letter, c.omitted, c.strict_correct) == (2, 4, 1, 1, 1)
    assert c.interval == wilson(2, 4)


def test_paired_counts_discordant_pairs_by_family_and_order():
    rs = [
        rec("f", "source", "forward", "correct"), rec("f", "full", "forward", "wrong"),  # b
        rec("f", "source", "mirror", "wrong"), rec("f", "full", "mirror", "correct"),  # c
        rec("g", "source", "forward", "no-letter"), rec("g", "full", "forward", "correct"),  # c
        rec("g", "source", "mirror", "correct"), rec("g", "full", "mirror", "correct"),  # concordant
        rec("h", "source", "forward", "omitted"), rec("h", "full", "forward", "wrong"),  # dropped: omitted
        rec("h", "source", "mirror", "correct"),  # dropped: no full partner
    ]
    p = paired_full_vs_source(rs)
    assert (p.pairs, p.b, p.c) == (4, 1, 2)
    assert p.p == pytest.approx(mcnemar_exact(1, 2))


def test_paired_conditions_keeps_the_concordant_pairs_and_orders_the_difference():
    rs = [
        rec("f", "full", "forward", "correct"), rec("f", "no-conflicts", "forward", "wrong"),  # b: only full
        rec("f", "full", "mirror", "correct"), rec("f", "no-conflicts", "mirror", "correct"),  # both
        rec("g", "full", "forward", "wrong"), rec("g", "no-conflicts", "forward", "no-letter"),  # neither
        rec("g", "full", "mirror", "wrong"), rec("g", "no-conflicts", "mirror", "correct"),  # c: only no-conflicts
        rec("h", "full", "forward", "wrong"), rec("h", "no-conflicts", "forward", "correct"),  # c
        rec("h", "source", "mirror", "correct"),  # another condition: ignored
    ]
    p = paired_conditions(rs, "full", "no-conflicts")
    assert (p.pairs, p.b, p.c, p.both, p.neither) == (5, 1, 2, 1, 1)
    assert p.difference == pytest.approx((2 - 1) / 5)
    assert p.interval == newcombe_paired(1, 2, 1, 1)
    assert p.interval.low < p.difference < p.interval.high
    assert paired_conditions([], "full", "no-conflicts").interval is None


def test_newcombe_paired_matches_a_published_example():
    # Fagerland, Lydersen & Laake, Statistical Analysis of Contingency Tables (2017), ch. 8: the
    # Cavo et al. (2012) table [[59, 6], [16, 80]]; "Newcombe square-and-add: estimate -0.0621
    # (95% CI -0.1186 to -0.0046)" for row margin minus column margin. Here the row condition is
    # the "second": both=59, only_second=6, only_first=16, neither=80.
    iv = newcombe_paired(59, 6, 16, 80)
    assert (round(iv.low, 4), round(iv.high, 4)) == (-0.1186, -0.0046)
    # swapping the conditions mirrors the interval
    sw = newcombe_paired(59, 16, 6, 80)
    assert (sw.low, sw.high) == pytest.approx((-iv.high, -iv.low))
    # all pairs discordant one way: the interval stays inside [-1, 1] and excludes 0
    one_way = newcombe_paired(0, 6, 0, 0)
    assert 0 < one_way.low < one_way.high == 1.0
    assert newcombe_paired(0, 0, 0, 0) is None
    with pytest.raises(ValueError, match=">= 0"):
        newcombe_paired(1, -1, 0, 0)


def test_score_pass_full_table():
    rs = []
    for fam in ("f", "g", "h"):
        for order in ("forward", "mirror"):
            rs.append(rec(fam, "source", order, "correct"))
            rs.append(rec(fam, "full", order, "wrong" if fam == "f" else "correct"))
            rs.append(rec(fam, "no-conflicts", order, "no-letter" if fam == "g" and order == "mirror" else "correct"))
    s = score_pass(rs)
    assert (s.conditions["source"].correct, s.conditions["source"].n) == (6, 6)
    assert (s.conditions["full"].correct, s.conditions["no-conflicts"].correct) == (4, 5)
    assert (s.total.correct, s.total.n, s.total.no_letter) == (15, 18, 1)
    assert s.full_minus_source == -2
    assert (s.paired.b, s.paired.c) == (2, 0)
    fam = {f.family: f for f in s.families}
    assert (fam["f"].total.correct, fam["f"].total.n) == (4, 6)
    assert fam["g"].conditions["no-conflicts"].no_letter == 1
    assert s.key_measured


def test_score_by_pass_splits_and_flags_unmeasured_key():
    rs = [rec("f", "source", "forward", "correct", pass_index=1),
          rec("f", "source", "forward", "wrong", pass_index=2, measured=False)]
    s1, s2 = score_by_pass(rs)
    assert (s1.pass_index, s1.total.correct, s1.key_measured) == (1, 1, True)
    assert (s2.pass_index, s2.total.correct, s2.key_measured) == (2, 0, False)


def test_score_pass_refuses_mixed_passes_and_duplicates():
    with pytest.raises(ValueError, match="mix passes"):
        score_pass([rec("f", "full", "forward", "correct", pass_index=1),
                    rec("f", "full", "mirror", "correct", pass_index=2)])
    with pytest.raises(ValueError, match="appears twice"):
        score_pass([rec("f", "full", "forward", "correct"), rec("f", "full", "forward", "wrong")])


def test_record_rejects_unknown_outcome_and_condition():
    with pytest.raises(ValueError, match="outcome"):
        rec("f", "full", "forward", "maybe")
    with pytest.raises(ValueError, match="condition"):
        rec("f", "ablated", "forward", "correct")

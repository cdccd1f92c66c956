"""`python -m plugins.items export ...`: the items as JSONL for other harnesses."""
import sys

from plugins.items.build import main

sys.exit(main())

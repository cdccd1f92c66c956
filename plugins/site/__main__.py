"""`python -m plugins.site reports/runs/* --out reports/site`: the report site."""
import sys

from plugins.site.build import main

sys.exit(main())

"""Allow ``python -m toolkit``."""

from toolkit.entry import main

main()

"""``python -m kcontroller`` runs the command line."""
import sys

from kcontroller.cli import main

sys.exit(main())

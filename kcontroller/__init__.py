"""The ``kcontroller`` command line. Thin: argument parsing, logging set-up and output; no logic of its own."""

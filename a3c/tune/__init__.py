"""a3c tune: the study, its objective, its set-up from the command line, its results and its search space."""

"""docs/ and README: the site, the command pages, words a user reads."""

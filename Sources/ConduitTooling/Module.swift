// Scaffolding: replaced by this target's code in the commits that follow.

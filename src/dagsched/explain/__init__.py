"""Why a plan is what it is: decision evidence for every scheduler (`evidence`), and (for the learned
policy) attributions of its choices."""

"""`sweep status`: launched runs, their state, last step and loss, and the prediction they are held to."""

"""`sweep verify`: the Figure-1 check of Tensor Programs V as a number, the drift of the optimum with width."""

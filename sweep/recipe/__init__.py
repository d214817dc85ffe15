"""`sweep recipe`: a transferred RunConfig's μP recipe written for another framework."""

"""`sweep doctor`: the pre-flight checklist of one RunConfig or study."""

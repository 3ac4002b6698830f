"""`railtrace sink`: railtrace's topics written into the store, in its own consumer group."""

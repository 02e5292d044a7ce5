"""What several plugins share (the load view, affinity terms, volumes, tolerations, resource
weights); never a plugin itself, and never importing one."""

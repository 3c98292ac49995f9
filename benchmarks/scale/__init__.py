"""Scale: Ray node groups on separate network hosts made of namespaces, over shaped links, against the local backend."""

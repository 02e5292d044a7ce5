"""Talks to the kube-apiserver: raw requests, bindings, events, leader election, evictions."""

"""The sandbox cluster: etcd, kube-apiserver, kwok and kube-controller-manager on loopback, their
certificates, nodes and processes, and the pinned builds of every upstream binary."""

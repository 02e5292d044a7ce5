"""The local control plane (etcd, kube-apiserver, kwok) and the synthetic load it runs under."""

"""The local cluster Ballast is tested, demonstrated and measured on, by role: `cluster` (the
control plane, its builds and pins), `load` (the synthetic load), `peers` (the upstream peers),
`demo` (`ballast demo`); `cli` (`ballast sandbox`) composes them."""

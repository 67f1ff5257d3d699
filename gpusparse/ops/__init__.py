"""Operations, written once for every device on top of ``gpusparse._kernels``."""

## ipc/: both wire protocols (launcher frames on SOCK_SEQPACKET, JSON-RPC lines on SOCK_STREAM).
## Linked by launcherd, controller and cli alike; needs only jansson.
noinst_LIBRARIES += libipc.a
libipc_a_SOURCES = \
	%reldir%/ipc-fdpass.c %reldir%/ipc-fdpass.h \
	%reldir%/ipc-frame.c %reldir%/ipc-frame.h \
	%reldir%/ipc-json.c %reldir%/ipc-json.h \
	%reldir%/ipc-jsonrpc.c %reldir%/ipc-jsonrpc.h \
	%reldir%/ipc-peer.c %reldir%/ipc-peer.h
libipc_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

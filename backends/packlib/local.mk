## backends/packlib/: libpacklib.a, what the pack programs shipped with cordon share (their
## JSON-RPC loop with the controller); linked by the packs, never by the controller.
noinst_LIBRARIES += libpacklib.a
libpacklib_a_SOURCES = backends/packlib/packlib.c backends/packlib/packlib.h
libpacklib_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) -pthread

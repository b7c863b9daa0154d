## backends/vm/: builtin:vm, a QEMU micro-VM per lease and per one-shot command. vm.c (the host
## side) joins libbackend.a; the guest agent is a static program the initramfs runs as PID 1
## (backends/vm/mkinitramfs.sh packs it with busybox and the kernel's virtio and 9p modules,
## which backends/vm/fetch-kernel.sh fetches).
libbackend_a_SOURCES += \
	backends/vm/vm.c backends/vm/vm.h backends/vm/vm-proto.h

vmguestdir = $(pkglibexecdir)
vmguest_PROGRAMS = backends/vm/guest/cordon-vm-agent
backends_vm_guest_cordon_vm_agent_SOURCES = backends/vm/guest/agent.c backends/vm/vm-proto.h
# Its own flags: it runs alone in the guest, so no sanitizer or shared library of the build.
backends_vm_guest_cordon_vm_agent_CFLAGS = -Os -Wall -Wextra
backends_vm_guest_cordon_vm_agent_LDFLAGS = -static -s

vmscriptsdir = $(pkgdatadir)/vm
dist_vmscripts_SCRIPTS = backends/vm/fetch-kernel.sh backends/vm/mkinitramfs.sh

TESTS += tests/integration/vm-backend.sh
EXTRA_DIST += tests/integration/vm-backend.sh

# Build and install Baton.
#
#   make                      build release binaries, the Swift runtime linked in (they run without a toolchain)
#   make deb                  build, then .build/baton_VERSION_ARCH.deb (see scripts/build-deb)
#   make install              install under PREFIX (default /usr/local), into DESTDIR if set
#   make install PREFIX=/usr DESTDIR=/tmp/pkg   a packager's staged install
#   make install-files BUILD_DIR=.build/debug   install already-built binaries (used by the tests)
#
# Installs: bin/batond, bin/baton, lib/systemd/system-generators/baton-schedule-generator (a link to batond), lib/systemd/system/batond.{service,socket}, lib/sysusers.d/baton.conf,
# lib/tmpfiles.d/baton.conf, share/man/man{1,5,8}, shell completions (bash, zsh, fish), share/doc/baton
# with the demo config in share/doc/baton/examples, and /etc/baton/baton.json5 (packaging/baton.json5:
# no action yet; only when absent: a local config is never overwritten).

PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
BUILD_DIR ?= .build/release
SWIFT ?= swift
CC ?= cc
# The Swift runtime linked in (the binaries run without a toolchain), full RELRO, and the C shim
# built with _FORTIFY_SOURCE: what a Debian package is expected to have.
# SCRATCH: another build directory (the package tests build there when .build/release is missing).
SCRATCH ?=
# No $ORIGIN in the library search path (--disable-local-rpath): the Swift runtime is linked in, and
# libpq and libcrypto, opened by name, must come from the system's libraries only, never from
# beside the binary.
# Linked by lld with packed relative relocations (DT_RELR, glibc 2.36): 40,000 relocations of the
# Swift metadata in 20 KB instead of 960 KB, which ld.so reads at every start (batond's RSS and size).
# The functions a start runs laid out first and together (packaging/startup-order.txt, written by
# scripts/order-symbols): a start touches a few hundred KB of text in a row, not pages all over 8 MB.
# No symbol of Baton's own in the dynamic symbol table (the static Swift runtime's link arguments ask
# for --export-dynamic: 5,300 names that every symbol lookup of ld.so at start went through first);
# nothing looks Baton's symbols up by name.
# Generic types' metadata made by direct calls to their accessors, not by demangling their names at
# run time (-disable-concrete-type-metadata-mangled-name-accessors): 0.36M fewer instructions in a
# `baton status`, whose start is most of what it costs.
# Each function in a section of its own, which is what lld can place (Swift's release objects put
# them all in one .text otherwise).
RELEASE_FLAGS = $(if $(SCRATCH),--scratch-path $(SCRATCH)) -c release --static-swift-stdlib -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now -Xcc -D_FORTIFY_SOURCE=2 \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs --disable-local-rpath \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
	-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
	-Xlinker --symbol-ordering-file=$(CURDIR)/packaging/startup-order.txt -Xlinker --no-warn-symbol-ordering \
	-Xlinker --no-export-dynamic

BINDIR = $(PREFIX)/bin
# baton-shim, the parent of each run that survives a restart of batond (batond looks beside itself, then in ../libexec/baton).
LIBEXECDIR = $(PREFIX)/libexec/baton
UNITDIR = $(PREFIX)/lib/systemd/system
GENERATORDIR = $(PREFIX)/lib/systemd/system-generators
SYSUSERSDIR = $(PREFIX)/lib/sysusers.d
TMPFILESDIR = $(PREFIX)/lib/tmpfiles.d
MANDIR = $(PREFIX)/share/man
DOCDIR = $(PREFIX)/share/doc/baton
BASHDIR = $(PREFIX)/share/bash-completion/completions
ZSHDIR = $(PREFIX)/share/zsh/site-functions
FISHDIR = $(PREFIX)/share/fish/vendor_completions.d

.PHONY: all build install install-files uninstall test deb

all: build

build:
	$(SWIFT) build $(RELEASE_FLAGS) --product batond
	$(SWIFT) build $(RELEASE_FLAGS) --product baton
	@# The shim with the C compiler: linked to libc alone, dynamically (SwiftPM's product, which the
	@# tests use, is linked by swiftc and static: 9.5 MB, which lintian refuses in a package).
	$(CC) -O2 -Wall -Wextra -o $(BUILD_DIR)/baton-shim Sources/baton-shim/main.c Sources/baton-shim/unread.c

deb: build
	BUILD_DIR=$(BUILD_DIR) scripts/build-deb

test:
	$(SWIFT) test

install: build install-files

install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(GENERATORDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(BASHDIR) $(DESTDIR)$(ZSHDIR) $(DESTDIR)$(FISHDIR) $(DESTDIR)$(SYSCONFDIR)/baton
	install -m 0755 $(BUILD_DIR)/batond $(BUILD_DIR)/baton $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 0755 $(BUILD_DIR)/baton-shim $(DESTDIR)$(LIBEXECDIR)/
	ln -sfn $$(realpath -m --relative-to=$(GENERATORDIR) $(BINDIR)/batond) $(DESTDIR)$(GENERATORDIR)/baton-schedule-generator
	sed 's|/usr/local/bin/|$(BINDIR)/|g; s|/etc/baton/baton.json5|$(SYSCONFDIR)/baton/baton.json5|' \
		systemd/batond.service > $(DESTDIR)$(UNITDIR)/batond.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/batond.service
	install -m 0644 systemd/batond.socket $(DESTDIR)$(UNITDIR)/batond.socket
	install -m 0644 systemd/batond-webhooks.socket $(DESTDIR)$(UNITDIR)/batond-webhooks.socket
	sed 's|/usr/local/bin/|$(BINDIR)/|g' systemd/baton-dashboard.service > $(DESTDIR)$(UNITDIR)/baton-dashboard.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/baton-dashboard.service
	install -m 0644 systemd/baton.sysusers $(DESTDIR)$(SYSUSERSDIR)/baton.conf
	install -m 0644 systemd/baton.tmpfiles $(DESTDIR)$(TMPFILESDIR)/baton.conf
	gzip -9n < docs/man/baton.1 > $(DESTDIR)$(MANDIR)/man1/baton.1.gz
	gzip -9n < docs/man/baton.json5.5 > $(DESTDIR)$(MANDIR)/man5/baton.json5.5.gz
	gzip -9n < docs/man/batond.8 > $(DESTDIR)$(MANDIR)/man8/batond.8.gz
	chmod 0644 $(DESTDIR)$(MANDIR)/man*/*.gz
	install -m 0644 README.md docs/protocol.md docs/schema.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 examples/baton.json5 $(DESTDIR)$(DOCDIR)/examples/baton.json5
	$(BUILD_DIR)/baton completion bash > $(DESTDIR)$(BASHDIR)/baton
	$(BUILD_DIR)/baton completion zsh > $(DESTDIR)$(ZSHDIR)/_baton
	$(BUILD_DIR)/baton completion fish > $(DESTDIR)$(FISHDIR)/baton.fish
	chmod 0644 $(DESTDIR)$(BASHDIR)/baton $(DESTDIR)$(ZSHDIR)/_baton $(DESTDIR)$(FISHDIR)/baton.fish
	test -e $(DESTDIR)$(SYSCONFDIR)/baton/baton.json5 || install -m 0644 packaging/baton.json5 $(DESTDIR)$(SYSCONFDIR)/baton/baton.json5

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/batond $(DESTDIR)$(BINDIR)/baton $(DESTDIR)$(GENERATORDIR)/baton-schedule-generator $(DESTDIR)$(UNITDIR)/batond.service \
		$(DESTDIR)$(UNITDIR)/batond.socket $(DESTDIR)$(UNITDIR)/batond-webhooks.socket $(DESTDIR)$(UNITDIR)/baton-dashboard.service $(DESTDIR)$(SYSUSERSDIR)/baton.conf $(DESTDIR)$(TMPFILESDIR)/baton.conf \
		$(DESTDIR)$(MANDIR)/man1/baton.1.gz $(DESTDIR)$(MANDIR)/man5/baton.json5.5.gz $(DESTDIR)$(MANDIR)/man8/batond.8.gz \
		$(DESTDIR)$(BASHDIR)/baton $(DESTDIR)$(ZSHDIR)/_baton $(DESTDIR)$(FISHDIR)/baton.fish
	rm -rf $(DESTDIR)$(DOCDIR)

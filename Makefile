# ftrace trigger labs - front door.
#
#   make lab 1        build checkpoint 1, boot it in QEMU, run its lab, grade it
#   make gdb 1        boot checkpoint 1 paused and attach gdb with our helpers
#   make check        everything (the test command CI runs)
#   make bench        what each mechanism costs, as ratios (build/bench/)
#   make help         all targets
#
# "make lab 3" and "make lab N=3" are the same thing. The work is done by
# scripts/ftlab.py; this file only turns make's arguments into its command line.

PYTHON ?= python3
FTLAB  := $(PYTHON) scripts/ftlab.py

# Options passed through to the harness when set on the command line.
FTLAB_OPTS := $(if $(KERNEL),--kernel $(KERNEL)) $(if $(BUILD),--build-dir $(BUILD)) \
	$(if $(GDB_PORT),--gdb-port $(GDB_PORT)) $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
	$(if $(V),--verbose) $(if $(BASE),--base $(BASE)) \
	$(if $(LIST),--list) $(if $(CHECK),--check $(CHECK)) \
	$(if $(FULL),--full) $(if $(BENCH_KERNELS),--bench-kernels "$(BENCH_KERNELS)") \
	$(if $(DEBUG),--debug) $(if $(SEED),--seed $(SEED))

NUMBERED := lab gdb shell kernel robust
TARGETS  := $(NUMBERED) list docs check bench clean distclean deps rebase help

# The checkpoint number: N=3, or the word after the target ("make lab 3").
ARG_N := $(firstword $(filter-out $(TARGETS),$(MAKECMDGOALS)))
N ?= $(ARG_N)

.PHONY: $(TARGETS)
.DEFAULT_GOAL := help

$(NUMBERED):
	@$(FTLAB) $@ $(N) $(FTLAB_OPTS)

list check bench deps rebase:
	@$(FTLAB) $@ $(FTLAB_OPTS)

# "make docs" is the whole series; "make docs 3" checkpoint 3's view.
docs:
	@$(FTLAB) docs $(N) $(FTLAB_OPTS)

clean:
	@$(FTLAB) clean $(FTLAB_OPTS)

distclean:
	@$(FTLAB) clean --all $(FTLAB_OPTS)

help:
	@sed -n '2,10p' Makefile | sed 's/^# \{0,1\}//'
	@$(FTLAB) --help | sed -n '/^targets:/,/^positional/p' | sed '$$d'

# Swallow the number in "make lab 3" so make does not look for a target "3".
ifneq ($(ARG_N),)
$(ARG_N):
	@:
endif

# ftrace trigger labs - front door.
#
#   make lab 1        build checkpoint 1, boot it in QEMU, run its lab, grade it
#   make gdb 1        boot checkpoint 1 paused and attach gdb with our helpers
#   make exercise 3   checkpoint 3 as an exercise; make grade 3 scores your work
#   make mutants 3    wrong bodies in exercise 3's holes: does make grade catch them?
#   make check        everything (the test command CI runs)
#   make bench        what each mechanism costs, as ratios (build/bench/)
#   make help         all targets
#
# "make lab 3" and "make lab N=3" are the same thing. The work is done by
# scripts/ftlab.py; this file only turns make's arguments into its command line.

PYTHON ?= python3
FTLAB  := $(PYTHON) scripts/ftlab.py

# Options passed through to the harness when set on the command line, as
# they were given: scripts/ftlab.py checks every value (DEBUG=0 is off,
# DEBUG=yes an error) and every combination.
FTLAB_OPTS := $(if $(KERNEL),--kernel $(KERNEL)) $(if $(BUILD),--build-dir $(BUILD)) \
	$(if $(GDB_PORT),--gdb-port $(GDB_PORT)) $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
	$(if $(V),--verbose=$(V)) $(if $(BASE),--base $(BASE)) \
	$(if $(LIST),--list=$(LIST)) $(if $(CHECK),--check $(CHECK)) \
	$(if $(FULL),--full=$(FULL)) $(if $(BENCH_KERNELS),--bench-kernels "$(BENCH_KERNELS)") \
	$(if $(DEBUG),--debug=$(DEBUG)) $(if $(SEED),--seed $(SEED)) $(if $(N),--n $(N)) \
	$(if $(RESULTS),--results $(RESULTS)) \
	$(if $(ANSWERS),--answers $(ANSWERS)) \
	$(if $(STUDENT),--student=$(STUDENT)) $(if $(TODO),--todo $(TODO)) $(if $(LEVEL),--level $(LEVEL)) \
	$(if $(FORCE),--force=$(FORCE)) $(if $(FRESH),--fresh=$(FRESH)) \
	$(if $(FAULTS),--faults=$(FAULTS)) $(if $(KCSAN),--kcsan=$(KCSAN)) $(if $(TRACE),--trace=$(TRACE)) \
	$(if $(SCREENSHOT),--screenshot=$(SCREENSHOT)) $(if $(QUICK),--quick=$(QUICK)) \
	$(if $(ID),--id "$(ID)")

NUMBERED := lab gdb shell kernel robust exercise save grade solution hint kernelshark report mutants
TARGETS  := $(NUMBERED) list docs check bench clean distclean deps rebase help

# The words besides the target ("make lab 3": 3), passed on as they are,
# other targets included: the harness takes one checkpoint number, and
# says so when it gets two, or one besides N=, or another target.
WORDS = $(filter-out $@,$(MAKECMDGOALS))

.PHONY: $(TARGETS)
.DEFAULT_GOAL := help

$(NUMBERED) list check bench deps rebase docs:
	@$(FTLAB) $@ $(WORDS) $(FTLAB_OPTS)

clean:
	@$(FTLAB) clean $(WORDS) $(FTLAB_OPTS)

distclean:
	@$(FTLAB) clean --all $(WORDS) $(FTLAB_OPTS)

help:
	@sed -n '2,12p' Makefile | sed 's/^# \{0,1\}//'
	@$(FTLAB) --help | sed -n '/^targets:/,/^positional/p' | sed '$$d'

# Swallow the number in "make lab 3" so make does not look for a target "3".
EXTRA_GOALS := $(filter-out $(TARGETS),$(MAKECMDGOALS))
ifneq ($(EXTRA_GOALS),)
$(EXTRA_GOALS):
	@:
endif

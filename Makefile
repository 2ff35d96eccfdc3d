# The workbook's one Makefile.
#
#   make deps          install the Debian packages the workbook needs (once)
#   make tangle        chapters/*.nw -> tangled/ kernels/ tests/ figures/
#   make tangle-check  fail on stray roots (misspelled chunk names) and bare <<<
#   make build         compile the library, tools, benches and test programs
#   make test          run every chapter's Check program (GPU cases skip without a GPU)
#   make bench         on a GPU machine: run every bench driver, write data/NN-topic/*.dat
#   make bench-cpu     only the CPU parts of the benches
#   make figures       draw figures/*.pdf from the committed data with gnuplot
#   make book          weave the chapters into build/book.pdf (and ./book.pdf)
#   make clean         remove everything generated
#
# Every generated file comes from chapters/*.nw; nothing under tangled/, kernels/,
# tests/, figures/ or build/ is edited by hand.

SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -ec
.DEFAULT_GOAL := book

CHAPTERS := $(sort $(wildcard chapters/*.nw))
STAMPS   := $(patsubst chapters/%.nw,build/stamps/%.tangled,$(CHAPTERS))

# ---------------------------------------------------------------- toolchain
CUDA      ?= /usr/local/cuda
NVCC      ?= $(shell command -v nvcc 2>/dev/null || echo $(CUDA)/bin/nvcc)
CC        := gcc
LIBDIR    := /usr/lib/x86_64-linux-gnu
# The commit, with -dirty when the code chunks of a chapter differ from HEAD's (a prose edit
# does not count), as chapters/99-plumbing.nw explains.
CODE_OF   := awk '/^<<.*>>=[ \t]*$$/ { c = 1 } /^@([ \t]|$$)/ { c = 0 } c'
COMMIT    := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)$(shell \
               git rev-parse -q --verify HEAD >/dev/null 2>&1 && for f in chapters/*.nw; do \
                 cmp -s <(git show HEAD:$$f 2>/dev/null | $(CODE_OF)) <($(CODE_OF) $$f) \
                 || { echo -dirty; break; }; done)
GENCODE   := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
CFLAGS    := -O2 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter -fopenmp \
             -Itangled/include -isystem $(CUDA)/include -isystem /usr/include/x86_64-linux-gnu/openblas-pthread
NVFLAGS   := -O3 -g -std=c++17 $(GENCODE) -Itangled/include -Xcompiler -Wall
FLAGS_STR := gcc $(CFLAGS) | nvcc $(NVFLAGS)
DEFS      := -DWB_COMMIT='"$(COMMIT)"' -DWB_FLAGS='"$(FLAGS_STR)"'
# cudart is linked statically (nvcc's default); Check and subunit from their static archives.
LIBS      := -lcublas -lcusolver -lcusparse -llapacke -lopenblas -lgomp -lm -lpthread -lrt
CHECKLIBS := $(LIBDIR)/libcheck.a $(LIBDIR)/libsubunit.a
LINK      := $(NVCC) $(GENCODE) -cudart static

# ---------------------------------------------------------------- deps
DEBS := noweb check gnuplot-nox libopenblas-dev liblapacke-dev libopenmpi-dev openmpi-bin \
        texlive-latex-base texlive-latex-recommended texlive-latex-extra \
        texlive-fonts-recommended texlive-pictures lmodern latexmk make gcc git
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps
deps:
	@missing=$$(for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all Debian packages present"; fi
	@[ -x "$(NVCC)" ] || echo "deps: nvcc not found: install the CUDA Toolkit (https://developer.nvidia.com/cuda-downloads) and put its bin/ on PATH"

# ---------------------------------------------------------------- tangle
# One stamp per chapter.  C and CUDA are tangled with -L so that compiler and Check
# messages name chapters/NN-topic.nw:LINE; headers, scripts and gnuplot without it.
# cpif rewrites a file only when it changed, so a prose edit rebuilds nothing.
.PHONY: tangle tangle-check
tangle: $(STAMPS)

build/stamps/%.tangled: chapters/%.nw
	@mkdir -p build/stamps
	@for root in $$(noroots $< | sed -n 's/^<<\[\[\(.*\)\]\]>>$$/\1/p'); do \
	  mkdir -p $$(dirname $$root); \
	  case $$root in \
	    *.c|*.cu) line=-L ;; \
	    *) line= ;; \
	  esac; \
	  notangle $$line -R"[[$$root]]" $< 2>build/stamps/$*.err | cpif $$root \
	    || { cat build/stamps/$*.err >&2; exit 1; }; \
	  if [ -s build/stamps/$*.err ]; then cat build/stamps/$*.err >&2; exit 1; fi; \
	  case $$root in *.sh) chmod +x $$root ;; esac; \
	done
	@touch $@

tangle-check:
	@status=0; \
	for f in $(CHAPTERS); do \
	  bad=$$(grep -nE '(^|[^@])<<<' $$f || true); \
	  if [ -n "$$bad" ]; then echo "$$f: bare '<<<' (write kernel@<<<...>>>): $$bad"; status=1; fi; \
	  stray=$$(noroots $$f | grep -vE '^<<\[\[[A-Za-z0-9_./-]+\]\]>>$$' || true); \
	  if [ -n "$$stray" ]; then echo "$$f: stray root (a misspelled chunk name?): $$stray"; status=1; fi; \
	  undef=$$(for r in $$(noroots $$f | sed -n 's/^<<\[\[\(.*\)\]\]>>$$/\1/p'); do \
	             notangle -R"[[$$r]]" $$f 2>&1 >/dev/null; done); \
	  if [ -n "$$undef" ]; then echo "$$f: $$undef"; status=1; fi; \
	done; \
	[ $$status = 0 ] && echo "tangle-check: $(words $(CHAPTERS)) chapters clean"; exit $$status

# ---------------------------------------------------------------- build
# The lists below are read after tangling, by a second make, so that files a chapter
# adds are found without editing this Makefile.
.PHONY: build
build: tangle
	@$(MAKE) --no-print-directory all-binaries

LIB_C   = $(wildcard tangled/src/*.c)
LIB_CU  = $(wildcard kernels/*.cu)
LIB_OBJ = $(patsubst tangled/src/%.c,build/obj/%.o,$(LIB_C)) $(patsubst kernels/%.cu,build/obj/%.cu.o,$(LIB_CU))
TOOLS   = $(patsubst tangled/tools/%.c,build/bin/%,$(wildcard tangled/tools/*.c))
BENCHES = $(patsubst tangled/bench/%.c,build/bin/bench-%,$(wildcard tangled/bench/*.c))
TESTS   = $(patsubst tests/%.c,build/bin/test-%,$(wildcard tests/*.c))
HEADERS = $(wildcard tangled/include/*.h)

# Objects of tools, benches and tests are not intermediates: kept, a library change relinks
# the programs without recompiling them.
.SECONDARY:
.PHONY: all-binaries
all-binaries: build/libworkbook.a $(TOOLS) $(BENCHES) $(TESTS)

build/obj/%.o: tangled/src/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEFS) -c $< -o $@
build/obj/%.cu.o: kernels/%.cu $(HEADERS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@
# The commit is compiled into the provenance header; recompile when it changes.
build/commit.stamp: FORCE
	@mkdir -p build; echo '$(COMMIT)' | cmp -s - $@ || echo '$(COMMIT)' > $@
build/obj/wb_bench.o: build/commit.stamp
.PHONY: FORCE
FORCE:
build/libworkbook.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
build/obj/tools/%.o: tangled/tools/%.c $(HEADERS) $(wildcard tangled/tools/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEFS) -c $< -o $@
build/obj/bench/%.o: tangled/bench/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEFS) -c $< -o $@
build/obj/tests/%.o: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEFS) -c $< -o $@
build/bin/%: build/obj/tools/%.o build/libworkbook.a
	@mkdir -p $(@D)
	$(LINK) $^ -o $@ $(LIBS)
build/bin/bench-%: build/obj/bench/%.o build/libworkbook.a
	@mkdir -p $(@D)
	$(LINK) $^ -o $@ $(LIBS)
build/bin/test-%: build/obj/tests/%.o build/libworkbook.a
	@mkdir -p $(@D)
	$(LINK) $^ -o $@ $(CHECKLIBS) $(LIBS)

# ---------------------------------------------------------------- test
# Each test program prints its own "N passed, N failed, N skipped" and leaves TAP and
# XML logs and a counts file in build/tests/; the sum is the last line printed.
.PHONY: test
test: build
	@mkdir -p build/tests; rm -f build/tests/*.counts
	@fail=0; for t in build/bin/test-*; do \
	  echo "== $$t"; WB_LOGDIR=build/tests $$t || fail=1; done; \
	cat build/tests/*.counts | awk '{p+=$$1; f+=$$2; s+=$$3} END {printf "%d passed, %d failed, %d skipped\n", p, f, s; exit (f > 0)}' \
	  && exit $$fail

# ---------------------------------------------------------------- bench and figures
DATA ?= data
.PHONY: bench bench-cpu figures
bench: build
	@for b in build/bin/bench-*; do echo "== $$b"; $$b --out $(DATA); done
# CPU-only results go to build/data-cpu, so that they never overwrite the GPU measurements.
CPUDATA ?= build/data-cpu
bench-cpu: build
	@for b in build/bin/bench-*; do echo "== $$b --cpu-only"; $$b --cpu-only --quick --out $(CPUDATA); done

FIGS = $(patsubst figures/%.gp,figures/%.pdf,$(wildcard figures/*.gp))
figures: tangle
	@$(MAKE) --no-print-directory all-figures
.PHONY: all-figures
all-figures: $(FIGS)
figures/%.pdf: figures/%.gp $(wildcard data/*/*.dat)
	@missing=$$(grep -o 'data/[A-Za-z0-9_./-]*\.dat' $< | sort -u | while read d; do [ -f $$d ] || echo $$d; done); \
	if [ -n "$$missing" ]; then echo "figures: $@ not drawn, no data yet:" $$missing; \
	else echo "gnuplot $<"; gnuplot $<; fi

# ---------------------------------------------------------------- book
# All chapters are woven together so that the chunk and identifier indexes and the
# cross-references span the whole book.
.PHONY: book
book: build/book.pdf
	@cp build/book.pdf book.pdf
BOX_TOL  ?= 2
OVERFULL ?= fail
build/book.pdf: book.pdf.in $(CHAPTERS) figures
	@mkdir -p build/book
	@# book.pdf.in merges by union, which can bring back a deleted \bibitem: refuse a key
	@# defined twice, and an entry whose printed text still says "seed" (a placeholder)
	@dup=$$(grep -o '^\\bibitem{[^}]*}' book.pdf.in | sort | uniq -d || true); \
	 if [ -n "$$dup" ]; then echo "book.pdf.in: defined twice (delete the old line):" $$dup; exit 1; fi; \
	 ph=$$(grep -n '^\\bibitem{[^}]*}.*\b[Ss]eed\b' book.pdf.in | cut -c1-60 || true); \
	 if [ -n "$$ph" ]; then echo "book.pdf.in: placeholder entries (cite the document itself):"; \
	   echo "$$ph"; exit 1; fi
	noweave -n -index $(CHAPTERS) > build/book/chapters.tex
	@# one caption line per measured .dat: where, with what, when
	@rm -rf build/book/prov; for d in $(wildcard data/*/*.dat); do \
	  mkdir -p build/book/prov/$$(basename $$(dirname $$d)); \
	  { printf 'Measured on %s; commit %s, %s.' \
	      "$$(sed -n 's/^# gpu: //p' $$d | head -1)" "$$(sed -n 's/^# commit: //p' $$d | head -1)" \
	      "$$(sed -n 's/^# date: //p' $$d | head -1)"; } \
	  | sed -e 's/[_%&#$$]/\\&/g' > build/book/prov/$${d#data/}.tex; done
	sed -e 's|@CHAPTERS@|\\message{[WBCHAPTERS}\\input{chapters.tex}\\message{WBCHAPTERS]}|' \
	    -e 's|@COMMIT@|$(COMMIT)|' \
	    -e "s|@DATE@|$$(date -u +%Y-%m-%d)|" book.pdf.in > build/book/book.tex
	cd build/book && max_print_line=100000 latexmk -pdf -interaction=nonstopmode -halt-on-error \
	  book.tex >latexmk.log 2>&1 || { tail -40 latexmk.log; exit 1; }
	@if grep -E "undefined references|Reference .* undefined|Citation .* undefined" build/book/book.log; then \
	  echo "book: undefined references"; exit 1; fi
	@# overfull boxes: a code line wider than BOX_TOL points fails (chapters/99-plumbing.nw)
	@perl tangled/scripts/book-boxes.pl build/book/book.log build/book/chapters.tex $(BOX_TOL) \
	  || [ "$(OVERFULL)" = warn ] || { echo "book: code runs off the page (make book OVERFULL=warn builds it anyway)"; exit 1; }
	@# one warning line per figure whose data came from other code (chapters/99-plumbing.nw)
	@bash tangled/scripts/data-fresh.sh figures/*.gp
	cp build/book/book.pdf $@

# ---------------------------------------------------------------- clean
.PHONY: clean
clean:
	rm -rf build tangled kernels tests figures book.pdf

# ---------------------------------------------------------------- MPI (chapter 6)
# Programs from tangled/mpi/*.c: files named mp_*.c are the MPI library of the
# chapter, every other file is a program build/bin/NAME.  They are compiled with
# mpicc's flags and linked by nvcc like the other programs; NCCL is loaded at run
# time, so it is not linked.  Without mpicc this section builds nothing.
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
MPI_CFLAGS = $(shell mpicc --showme:compile)
MPI_LIBS   = $(shell mpicc --showme:link)
MPI_LIB_C  = $(wildcard tangled/mpi/mp_*.c)
MPI_PROG_C = $(filter-out $(MPI_LIB_C),$(wildcard tangled/mpi/*.c))
MPI_OBJ    = $(patsubst tangled/mpi/%.c,build/obj/mpi/%.o,$(MPI_LIB_C))
MPI_BINS   = $(patsubst tangled/mpi/%.c,build/bin/%,$(MPI_PROG_C))
all-binaries: $(MPI_BINS)
build/obj/mpi/%.o: tangled/mpi/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(MPI_CFLAGS) $(DEFS) -c $< -o $@
$(MPI_BINS): build/bin/%: build/obj/mpi/%.o $(MPI_OBJ) build/libworkbook.a
	@mkdir -p $(@D)
	$(LINK) $^ -o $@ $(LIBS) $(MPI_LIBS) -ldl
endif
# The MPI cases alone (make test runs them too, inside build/bin/test-06-mpi).
.PHONY: mpitest
mpitest: build
	@mkdir -p build/tests; WB_LOGDIR=build/tests build/bin/test-06-mpi

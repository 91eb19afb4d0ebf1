# Sourced (`. scripts/huge-pages.sh`) by scripts/test.sh and models/loupe-tiny/finetune.sh: adds
# glibc.malloc.hugetlb=1 to GLIBC_TUNABLES, so glibc's malloc asks the kernel for transparent huge pages (glibc 2.35+;
# older glibc, other C libraries and kernels with THP off ignore it). A glibc.malloc.hugetlb the user set is kept.
# Why: train.py allocates and frees attention matrices of hundreds of MB a step; on a 2-core VM (THP "madvise") two CPU
# steps took 88.6 s without it and 17.2 s with it, with the same losses. scripts/start.mjs does the same for the app.
case ":${GLIBC_TUNABLES:-}:" in
  *:glibc.malloc.hugetlb=*) ;;
  *) export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1" ;;
esac

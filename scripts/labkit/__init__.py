"""Host-side harness of ftrace trigger labs.

Modules, in the order a lab run uses them:
  series    the checkpoints and labs that exist in the repo
  deps      Debian packages the harness needs
  tree      the kernel source tree, one git branch per checkpoint
  kbuild    configure and build a checkpoint's kernel
  initramfs the guest: busybox, our guest library, labs, ftracetest
  qemu      boot a guest, watch its console, time out, spot oopses
  protocol  the guest protocol: plan items, and the "@@ftlab" lines read back
  grade     compare check output with expectations, show diffs
  ftmatrix  what ftracetest must report at each checkpoint
  gdbrun    gdb, interactive and unattended
  ui        progress lines and verdicts
  interrupt Ctrl-C: stop every guest and build, start nothing queued
  errors    the harness's own errors (HarnessError)
"""

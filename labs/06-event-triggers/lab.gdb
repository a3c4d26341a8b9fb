# Lab 06 in gdb: an event runs its triggers.
#
# gdb stops twice:
#  - the first time an event's triggers are walked: the article's
#    enable_event:kmem:kmalloc:1 on syscalls:sys_enter_read, at the
#    entry of the lab's first read(). This trigger has no filter and
#    does not wait for the record, so it is called with no record
#    (rec is NULL in "info args"). Watch for:
#      ft-triggers: enable_event:kmem:kmalloc:count=1, not fired yet;
#      ft-event kmem kmalloc: SOFT_MODE|SOFT_DISABLED, "enable file
#      reads: 0*", the state the shell can never see (reading the
#      enable file is a read(), which runs this trigger first);
#  - the first time post triggers run: stacktrace:5 if bytes_req >= 512
#    on kmem:kmalloc, after the record of the first 4096-byte
#    allocation was made and (kmalloc being soft disabled) discarded.
#    Watch for: count=5 still (stacktrace_trigger() has not run
#    yet), the filter text, and in the backtrace the seq_file read
#    that allocates.
# Both breakpoints are deleted at their first stop: these functions
# run for every hit of every event that has triggers.

ft-break post-trigger
set $lab_post_first = $ft_bp_first
set $lab_post_last = $ft_bp_last
commands $lab_post_first-$lab_post_last
  silent
  echo \n=== lab 06: in the post-trigger step, after the event's record\n
  bt 14
  info args
  ft-triggers kmem kmalloc
  ft-event kmem kmalloc
  delete $lab_post_first-$lab_post_last
  if $ft_batch
    continue
  end
end

ft-break trigger
set $lab_first = $ft_bp_first
set $lab_last = $ft_bp_last
commands $lab_first-$lab_last
  silent
  echo \n=== lab 06: in the trigger walk of an event\n
  bt 6
  info args
  ft-triggers syscalls sys_enter_read
  ft-event syscalls sys_enter_read
  ft-event kmem kmalloc
  delete $lab_first-$lab_last
  if $ft_batch
    continue
  end
end


echo \nLab 06: 'continue' boots the guest and runs the lab; gdb stops in the trigger walk\n
echo (enable_event on sys_enter_read, first read()), then in the post-trigger step\n
echo (stacktrace on kmalloc). Then: 'print *$ft_trigger', 'ft-triggers kmem kmalloc' during\n
echo the stacktrace check (watch count drop), 'ft-break trigger' again, 'help ft-triggers'.\n

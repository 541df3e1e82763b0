/* foliotrace: a Valgrind tool that records what a program does to its memory, page by page,
 * for foliosim (`foliosim trace record`, crates/foliosim-cli/src/trace_record.rs).
 *
 * What it records, per thread:
 *   - its loads and stores, collapsed: consecutive accesses of one thread to one page become one
 *     record (page, written?, how many accesses, instructions retired since the thread's
 *     previous record);
 *   - the address-space syscalls (mmap, munmap, mremap, brk, mprotect, madvise) with their
 *     arguments and results, the file behind a mapping, read/write and posix_fadvise of files
 *     (page-cache use), the threads and processes it starts (clone, fork, vfork) and exits;
 *   - the kernel's copies to and from its memory in syscalls (read()'s buffer, write()'s), as
 *     accesses of the calling thread.
 *
 * Speed: a superblock's instructions are counted with one inline add per exit, not a call per
 * instruction; an access costs an inline compare of its page with the running thread's open
 * record and an inline count increment. A helper is called only when the page changes.
 *
 * ---------------------------------------------------------------------------------------------
 * The raw stream (read by trace_record.rs; not a file format anyone keeps)
 *
 * Written to the file descriptor given by --out-fd=N (a pipe the recorder reads), in chunks,
 * each written by one write(2). Once the program forked, every process's chunks are at most
 * 4096 bytes (PIPE_BUF), so that the chunks of the processes sharing the pipe never interleave;
 * until then its only process writes chunks of up to 64 KiB, which take fewer system calls:
 *
 *   chunk   := pid:u32le payload_len:u32le payload
 *   payload := record*                      (a record never spans two chunks)
 *   record  := tag:u8 field*                (every field a LEB128 varint unless said otherwise)
 *
 * A process's chunks arrive in the order it wrote them. Records name threads by their serial in
 * their process: 0 for the process's first thread, then 1, 2, ... in order of creation. Accesses
 * and most events belong to the "current thread" of the process's stream, set by THREAD.
 *
 *   1  THREAD   serial                       the following records are this thread's
 *   0x80-0xff  ACCESS                        an access record of the current thread, in the
 *                                            trace's own encoding (docs/traces.md) without the
 *                                            thread field (the T bit is never set): the recorder
 *                                            copies it into the trace as it is. Its page is a
 *                                            delta from the thread's previous record's (0 first).
 *   4  START    parent_pid parent_serial     first record of a forked process (0 0: the first)
 *   5  FORK     child_pid                    the current thread forked process child_pid
 *   6  CLONE    child_serial                 the current thread started a thread
 *   7  EXIT     serial                       that thread exited
 *   8  MMAP     addr len prot flags file offset   file: 0 anonymous, else file serial + 1
 *   9  MUNMAP   addr len
 *  10  MREMAP   old_addr old_len new_addr new_len flags
 *  11  BRK      old_end new_end
 *  12  MPROTECT addr len prot
 *  13  MADVISE  addr len advice
 *  14  FILE     file_serial dev ino size_bytes path_len path_bytes   (path: at most 1024 bytes)
 *  15  READ     file_serial offset len       read/pread64 of a file
 *  16  WRITE    file_serial offset len       write/pwrite64 of a file
 *  17  END                                   the process exited; nothing follows
 *  18  EXEC     path_len path_bytes          the current thread calls execve(path) (at most 1024
 *                                            bytes); nothing follows if it succeeds
 *  19  FADVISE  file_serial offset len advice   posix_fadvise of a file (fadvise64)
 *
 * File serials are per process (a forked child inherits its parent's); the recorder identifies
 * files across processes by (dev, ino). A program that execs leaves the trace (valgrind runs
 * with --trace-children=no): its stream just stops, and the recorder ends its threads.
 * ---------------------------------------------------------------------------------------------
 */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

/* Not in the tool headers, but exported by libcoregrind: moves a descriptor above the range the
 * client may use (so a program that closes "all" its descriptors cannot close ours) and marks
 * it close-on-exec (so a program the client execs does not hold the pipe open). */
extern Int VG_(safe_fd)(Int oldfd);

#define PAGE_SHIFT 12
#define NO_PAGE (~0ULL)
#define CHUNK_BYTES 65536 /* the longest chunk */
#define ATOMIC_CHUNK_BYTES 4096 /* PIPE_BUF on Linux: one write(2) of a pipe at most this long is atomic */
#define CHUNK_HEADER_BYTES 8
#define MAX_PATH_BYTES 1024
#define MAX_THREADS 2048
#define MAX_FDS 4096

enum raw_tag {
   TAG_THREAD = 1,
   /* 2 and 3 are not used */
   TAG_START = 4,
   TAG_FORK = 5,
   TAG_CLONE = 6,
   TAG_EXIT = 7,
   TAG_MMAP = 8,
   TAG_MUNMAP = 9,
   TAG_MREMAP = 10,
   TAG_BRK = 11,
   TAG_MPROTECT = 12,
   TAG_MADVISE = 13,
   TAG_FILE = 14,
   TAG_READ = 15,
   TAG_WRITE = 16,
   TAG_END = 17,
   TAG_EXEC = 18,
   TAG_FADVISE = 19,
};

/* The trace format's access record (crates/foliosim/src/trace/format.rs): a tag of flags, then
 * the delta, count and instructions varints the flags call for. */
#define ACCESS 0x80
#define ACCESS_WRITE 0x01
#define ACCESS_COUNT 0x02
#define ACCESS_INSTRUCTIONS 0x08
#define DELTA_VARINT 0x00
#define DELTA_PLUS_ONE 0x10
#define DELTA_MINUS_ONE 0x20
#define DELTA_ZERO 0x30
#define MAX_ACCESS_COUNT 0xffffffffULL /* the format's count is a u32 */

/* ---- options ---- */

static Long clo_out_fd = -1;

static Bool process_cmd_line_option(const HChar *arg)
{
   if VG_INT_CLO(arg, "--out-fd", clo_out_fd) {
   } else {
      return False;
   }
   return True;
}

static void print_usage(void)
{
   VG_(printf)("    --out-fd=N     write the raw record stream to descriptor N (a pipe)\n");
}

static void print_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

/* ---- the running thread's open record, read and written by the instrumented code ---- */

/* Valgrind runs one client thread at a time: the generated code works on this one struct at a
 * fixed address, swapped in and out of `threads` when the running thread changes. */
static struct {
   ULong page;         /* the open record's page, NO_PAGE if none */
   ULong count;        /* accesses it collapses so far */
   ULong write;        /* 1 if any of them wrote */
   ULong icount;       /* instructions retired, up to the last superblock exit taken */
   ULong instructions; /* the open record's instructions since the thread's previous record */
} running = {NO_PAGE, 0, 0, 0, 0};

struct thread_state {
   Bool known;        /* has a serial in this process */
   Bool alive;
   UInt serial;
   ULong icount;      /* saved `running.icount` while the thread does not run */
   ULong last_record; /* its icount when its previous record opened */
   ULong last_page;   /* its previous record's page, for the page delta */
};

static struct thread_state threads[MAX_THREADS];
static ThreadId running_tid = VG_INVALID_THREADID;
static struct thread_state *running_thread = NULL; /* &threads[running_tid] */
static UInt next_serial = 0;

/* ---- the output buffer: one chunk ---- */

static Int out_fd = -1;
static Int my_pid = 0;
static UChar chunk[CHUNK_BYTES];
static Int chunk_len = CHUNK_HEADER_BYTES;
/* CHUNK_BYTES while this is the program's only process, ATOMIC_CHUNK_BYTES once there are more */
static Int chunk_limit = CHUNK_BYTES;
static Long stream_thread = -1; /* the serial the last THREAD record named */

static void put_u32le(UChar *at, UInt value)
{
   at[0] = value & 0xff;
   at[1] = (value >> 8) & 0xff;
   at[2] = (value >> 16) & 0xff;
   at[3] = (value >> 24) & 0xff;
}

static void flush_chunk(void)
{
   if (chunk_len == CHUNK_HEADER_BYTES || out_fd < 0) {
      chunk_len = CHUNK_HEADER_BYTES;
      return;
   }
   put_u32le(chunk, (UInt)my_pid);
   put_u32le(chunk + 4, (UInt)(chunk_len - CHUNK_HEADER_BYTES));
   Int written = VG_(write)(out_fd, chunk, chunk_len);
   if (written != chunk_len) {
      /* the recorder is gone: nothing more can be recorded, the program still runs to its end */
      VG_(message)(Vg_UserMsg, "foliotrace: cannot write the record stream (%d); recording stops\n",
                   written);
      VG_(close)(out_fd);
      out_fd = -1;
   }
   chunk_len = CHUNK_HEADER_BYTES;
}

/* Records are written straight into the chunk: begin() first makes room for the longest record
 * of its kind (a chunk never splits a record). */
#define MAX_FIELDS_BYTES (10 * 8)
static Int record_len; /* = chunk_len while a record is being written */

static void begin_with(UChar tag, Int extra_bytes)
{
   if (chunk_len + 1 + MAX_FIELDS_BYTES + extra_bytes > chunk_limit)
      flush_chunk();
   record_len = chunk_len;
   chunk[record_len++] = tag;
}

static void begin(UChar tag)
{
   begin_with(tag, 0);
}

/* Writes a varint at `at` and returns where it ends. The hot path keeps its cursor in a local:
 * every byte stored into the chunk may alias `record_len`, which would be reloaded after each. */
static inline UChar *put_at(UChar *at, ULong value)
{
   while (value >= 0x80) {
      *at++ = (UChar)(value | 0x80);
      value >>= 7;
   }
   *at++ = (UChar)value;
   return at;
}

static inline void put(ULong value)
{
   record_len = put_at(chunk + record_len, value) - chunk;
}

static void put_bytes(const HChar *bytes, Int len)
{
   VG_(memcpy)(chunk + record_len, bytes, len);
   record_len += len;
}

static inline void end(void)
{
   chunk_len = record_len;
}

/* ---- threads ---- */

static struct thread_state *thread_of(ThreadId tid)
{
   tl_assert(tid < MAX_THREADS);
   struct thread_state *t = &threads[tid];
   if (!t->known) {
      t->known = True;
      t->alive = True;
      t->serial = next_serial++;
      t->icount = 0;
      t->last_record = 0;
      t->last_page = 0;
   }
   return t;
}

/* Makes `tid` the stream's current thread. */
static void name_thread(ThreadId tid)
{
   UInt serial = thread_of(tid)->serial;
   if (stream_thread != serial) {
      begin(TAG_THREAD);
      put(serial);
      end();
      stream_thread = serial;
   }
}

static ULong zigzag(Long value)
{
   return ((ULong)value << 1) ^ (ULong)(value >> 63);
}

/* The delta classes of the tag, by zigzag(delta): 0, -1 and +1 need no varint. */
static const UChar delta_class[3] = {DELTA_ZERO, DELTA_MINUS_ONE, DELTA_PLUS_ONE};

/* One access record. Written without a branch the data decides where it can: records are
 * written by the billion, and a mispredicted branch costs about as much as the rest. */
static void put_access(ULong zdelta, ULong count, ULong instructions, ULong write)
{
   begin(ACCESS | (UChar)write | (count != 1 ? ACCESS_COUNT : 0) |
         (instructions != 0 ? ACCESS_INSTRUCTIONS : 0) |
         (zdelta < 3 ? delta_class[zdelta] : DELTA_VARINT));
   UChar *at = chunk + record_len;
   if (zdelta >= 3)
      at = put_at(at, zdelta);
   if (count < 0x80) {
      *at = (UChar)count; /* kept only if the tag says a count follows */
      at += count != 1;
   } else {
      at = put_at(at, count);
   }
   if (instructions != 0)
      at = put_at(at, instructions);
   record_len = at - chunk;
   end();
}

/* Writes the running thread's open record, if any, and leaves none open. */
static void close_record(void)
{
   if (running.page == NO_PAGE || running_thread == NULL)
      return;
   struct thread_state *t = running_thread;
   if (stream_thread != t->serial)
      name_thread(running_tid);
   ULong zdelta = zigzag((Long)(running.page - t->last_page));
   ULong count = running.count > 0 ? running.count : 1;
   ULong instructions = running.instructions;
   /* a count beyond 32 bits (billions of accesses to one page in a row) takes several records */
   while (count > MAX_ACCESS_COUNT) {
      put_access(zdelta, MAX_ACCESS_COUNT, instructions, running.write);
      count -= MAX_ACCESS_COUNT;
      zdelta = 0;
      instructions = 0;
   }
   put_access(zdelta, count, instructions, running.write);
   t->last_page = running.page;
   running.page = NO_PAGE;
   running.count = 0;
   running.write = 0;
}

/* Called by the generated code when an access leaves the open record's page. `pending` is the
 * number of instructions of the superblock not yet added to running.icount. The generated code
 * then counts the access itself (and marks a write). */
static VG_REGPARM(2) void new_page(ULong page, ULong pending)
{
   close_record();
   struct thread_state *t = running_thread;
   ULong now = running.icount + pending;
   running.page = page;
   running.count = 0;
   running.write = 0;
   running.instructions = now - t->last_record;
   t->last_record = now;
}

static void switch_to(ThreadId tid)
{
   if (tid == running_tid)
      return;
   if (running_tid != VG_INVALID_THREADID) {
      close_record();
      thread_of(running_tid)->icount = running.icount;
   }
   running_tid = tid;
   running_thread = thread_of(tid);
   running.page = NO_PAGE;
   running.count = 0;
   running.write = 0;
   running.icount = running_thread->icount;
}

/* ---- files ---- */

/* Per descriptor: 0 not looked at yet, -1 not a regular file, else the file serial + 1. */
static Long fd_files[MAX_FDS];
static UInt next_file = 0;

static void emit_file(UInt serial, ULong dev, ULong ino, Long size, const HChar *path)
{
   Int len = VG_(strlen)(path);
   if (len > MAX_PATH_BYTES)
      len = MAX_PATH_BYTES;
   begin_with(TAG_FILE, len);
   put(serial);
   put(dev);
   put(ino);
   put(size < 0 ? 0 : (ULong)size);
   put(len);
   put_bytes(path, len);
   end();
}

/* The file serial + 1 of descriptor `fd`, 0 if it is not a regular file; the FILE record is
 * written the first time. */
static ULong file_of(Long fd)
{
   if (fd < 0 || fd >= MAX_FDS)
      return 0;
   if (fd_files[fd] == 0) {
      struct vg_stat st;
      if (VG_(fstat)((Int)fd, &st) != 0 || !VKI_S_ISREG(st.mode)) {
         fd_files[fd] = -1;
      } else {
         HChar link[64];
         HChar path[MAX_PATH_BYTES + 1];
         VG_(sprintf)(link, "/proc/self/fd/%d", (Int)fd);
         SSizeT n = VG_(readlink)(link, path, MAX_PATH_BYTES);
         if (n < 0)
            n = 0;
         path[n] = 0;
         UInt serial = next_file++;
         emit_file(serial, st.dev, st.ino, st.size, path);
         fd_files[fd] = (Long)serial + 1;
      }
   }
   return fd_files[fd] < 0 ? 0 : (ULong)fd_files[fd];
}

static void forget_fd(Long fd)
{
   if (fd >= 0 && fd < MAX_FDS)
      fd_files[fd] = 0;
}

/* ---- the client's mappings made before it ran (its executable, the loader, its stack) ---- */

static Bool initial_mappings_done = False;

static void emit_initial_mappings(void)
{
   Addr starts[512];
   Int n = VG_(am_get_segment_starts)(SkFileC | SkAnonC | SkShmC, starts, 512);
   for (Int i = 0; i < n; i++) {
      NSegment const *seg = VG_(am_find_nsegment)(starts[i]);
      if (seg == NULL)
         continue;
      UInt prot = (seg->hasR ? VKI_PROT_READ : 0) | (seg->hasW ? VKI_PROT_WRITE : 0) |
                  (seg->hasX ? VKI_PROT_EXEC : 0);
      ULong file = 0;
      const HChar *path = seg->kind == SkFileC ? VG_(am_get_filename)(seg) : NULL;
      if (path != NULL) {
         struct vg_stat st;
         SysRes r = VG_(stat)(path, &st);
         UInt serial = next_file++;
         emit_file(serial, seg->dev, seg->ino, sr_isError(r) ? 0 : st.size, path);
         file = serial + 1;
      }
      /* The client's stack grows down into a reservation valgrind keeps below it, without a
         syscall: the mapping spans the reservation too, as the kernel's stack VMA would grow
         into it, so accesses to a deeper stack fall in a mapping. */
      Addr start = seg->start;
      if (seg->kind == SkAnonC && seg->start > 0) {
         NSegment const *below = VG_(am_find_nsegment)(seg->start - 1);
         if (below != NULL && below->kind == SkResvn)
            start = below->start;
      }
      begin(TAG_MMAP);
      put(start);
      put(seg->end - start + 1);
      put(prot);
      put(VKI_MAP_PRIVATE | (file ? 0 : VKI_MAP_ANONYMOUS));
      put(file);
      put(file ? (ULong)seg->offset : 0);
      end();
   }
}

/* ---- the kernel's accesses to the program's memory ---- */

/* A syscall copying to or from the program's memory (copy_to_user for read()'s buffer, a
 * stat structure, ...; copy_from_user for write()'s): the kernel touches each page of the range
 * through the program's page tables, so the pages are referenced (and faulted in) as if the
 * program had touched them. Valgrind tells the tool of each such range; they are recorded as
 * the thread's accesses, one per page, with no instructions of the program's own. */
static void kernel_access(ThreadId tid, Addr a, SizeT len, Bool is_write)
{
   if (len == 0 || tid == VG_INVALID_THREADID)
      return;
   switch_to(tid);
   for (ULong page = a >> PAGE_SHIFT; page <= (a + len - 1) >> PAGE_SHIFT; page++) {
      if (page != running.page)
         new_page(page, 0);
      running.count++;
      if (is_write)
         running.write = 1;
   }
}

static void syscall_wrote(CorePart part, ThreadId tid, Addr a, SizeT len)
{
   if (part == Vg_CoreSysCall)
      kernel_access(tid, a, len, True);
}

static void syscall_reads(CorePart part, ThreadId tid, const HChar *what, Addr a, SizeT len)
{
   if (part == Vg_CoreSysCall)
      kernel_access(tid, a, len, False);
}

/* ---- thread and process events ---- */

static void start_client_code(ThreadId tid, ULong blocks_dispatched)
{
   switch_to(tid);
   if (!initial_mappings_done) {
      initial_mappings_done = True;
      name_thread(tid);
      emit_initial_mappings();
   }
}

static void thread_created(ThreadId parent, ThreadId child)
{
   if (parent == VG_INVALID_THREADID) {
      thread_of(child); /* the first thread: serial 0 */
      return;
   }
   if (running_tid == parent)
      close_record();
   tl_assert(child < MAX_THREADS);
   threads[child].known = False; /* a ThreadId valgrind reuses is a new thread */
   UInt serial = thread_of(child)->serial;
   name_thread(parent);
   begin(TAG_CLONE);
   put(serial);
   end();
}

static void emit_exit(ThreadId tid)
{
   struct thread_state *t = thread_of(tid);
   if (!t->alive)
      return;
   if (running_tid == tid)
      close_record();
   t->alive = False;
   begin(TAG_EXIT);
   put(t->serial);
   end();
}

static void thread_exiting(ThreadId tid)
{
   emit_exit(tid);
   if (running_tid == tid) {
      running_tid = VG_INVALID_THREADID;
      running_thread = NULL;
   }
   threads[tid].known = False;
}

static void before_fork(ThreadId tid)
{
   if (running_tid == tid)
      close_record();
   flush_chunk(); /* else both processes would write what the parent buffered */
   chunk_limit = ATOMIC_CHUNK_BYTES;
}

static void in_fork_child(ThreadId tid)
{
   Int parent_pid = my_pid;
   UInt parent_serial = thread_of(tid)->serial;
   ULong icount = running_tid == tid ? running.icount : threads[tid].icount;
   my_pid = VG_(getpid)();
   /* only the forking thread lives on, as the child's first thread */
   for (Int i = 0; i < MAX_THREADS; i++)
      threads[i].known = False;
   next_serial = 0;
   struct thread_state *t = thread_of(tid);
   t->icount = icount;
   running_tid = tid;
   running_thread = t;
   running.icount = icount;
   running.page = NO_PAGE;
   stream_thread = -1;
   chunk_len = CHUNK_HEADER_BYTES;
   begin(TAG_START);
   put((ULong)parent_pid);
   put(parent_serial);
   end();
}

/* ---- syscalls ---- */

/* Copies the client's string at `addr` (at most MAX_PATH_BYTES) into `out`; its length, 0 if
 * the memory is not the client's to read. */
static Int client_string(Addr addr, HChar *out)
{
   Int len = 0;
   while (len < MAX_PATH_BYTES) {
      Addr at = addr + len;
      /* one check per page */
      if ((len == 0 || (at & 4095) == 0) && !VG_(am_is_valid_for_client)(at, 1, VKI_PROT_READ))
         break;
      HChar c = *(const HChar *)at;
      if (c == 0)
         break;
      out[len++] = c;
   }
   out[len] = 0;
   return len;
}

static void pre_syscall(ThreadId tid, UInt syscallno, UWord *args, UInt nArgs)
{
   switch (syscallno) {
   case __NR_execve: {
      /* if it succeeds this process image (and the buffer) is gone */
      if (running_tid == tid)
         close_record();
      name_thread(tid);
      HChar path[MAX_PATH_BYTES + 1];
      Int len = client_string(args[0], path);
      begin_with(TAG_EXEC, len);
      put(len);
      put_bytes(path, len);
      end();
      flush_chunk();
      break;
   }
   case __NR_execveat:
      if (running_tid == tid)
         close_record();
      flush_chunk();
      break;
   default:
      break;
   }
}

static ULong brk_end = 0;
static Bool brk_known = False;

static void post_syscall(ThreadId tid, UInt syscallno, UWord *args, UInt nArgs, SysRes res)
{
   if (sr_isError(res))
      return;
   UWord result = sr_Res(res);
   switch (syscallno) {
   case __NR_mmap:
   case __NR_munmap:
   case __NR_mremap:
   case __NR_brk:
   case __NR_mprotect:
   case __NR_madvise:
   case __NR_read:
   case __NR_pread64:
   case __NR_write:
   case __NR_pwrite64:
   case __NR_fadvise64:
   case __NR_clone:
   case __NR_fork:
   case __NR_vfork:
   case __NR_open:
   case __NR_openat:
   case __NR_creat:
      if (running_tid == tid)
         close_record();
      name_thread(tid);
      break;
   default:
      break;
   }
   switch (syscallno) {
   case __NR_mmap: {
      ULong file = (args[3] & VKI_MAP_ANONYMOUS) ? 0 : file_of((Long)(Int)args[4]);
      begin(TAG_MMAP);
      put(result);
      put(args[1]);
      put(args[2]);
      put(args[3]);
      put(file);
      put(file ? args[5] : 0);
      end();
      break;
   }
   case __NR_munmap:
      begin(TAG_MUNMAP);
      put(args[0]);
      put(args[1]);
      end();
      break;
   case __NR_mremap:
      begin(TAG_MREMAP);
      put(args[0]);
      put(args[1]);
      put(result);
      put(args[2]);
      put(args[3]);
      end();
      break;
   case __NR_brk:
      if (brk_known && result != brk_end) {
         begin(TAG_BRK);
         put(brk_end);
         put(result);
         end();
      }
      brk_end = result;
      brk_known = True;
      break;
   case __NR_mprotect:
      begin(TAG_MPROTECT);
      put(args[0]);
      put(args[1]);
      put(args[2]);
      end();
      break;
   case __NR_madvise:
      begin(TAG_MADVISE);
      put(args[0]);
      put(args[1]);
      put(args[2]);
      end();
      break;
   case __NR_read:
   case __NR_write:
   case __NR_pread64:
   case __NR_pwrite64: {
      ULong file = file_of((Long)(Int)args[0]);
      if (file == 0 || result == 0)
         break;
      ULong offset;
      if (syscallno == __NR_pread64 || syscallno == __NR_pwrite64) {
         offset = args[3];
      } else {
         Off64T at = VG_(lseek)((Int)args[0], 0, VKI_SEEK_CUR);
         offset = at < 0 || (ULong)at < result ? 0 : (ULong)at - result;
      }
      Bool is_read = syscallno == __NR_read || syscallno == __NR_pread64;
      begin(is_read ? TAG_READ : TAG_WRITE);
      put(file - 1);
      put(offset);
      put(result);
      end();
      break;
   }
   case __NR_fadvise64: {
      /* sort, for one, asks for sequential readahead on every file it reads */
      ULong file = file_of((Long)(Int)args[0]);
      if (file == 0)
         break;
      begin(TAG_FADVISE);
      put(file - 1);
      put(args[1]);
      put(args[2]);
      put(args[3]);
      end();
      break;
   }
   case __NR_clone:
      /* a thread (CLONE_VM) was reported by thread_created; the child of a fork sees 0 */
      if ((args[0] & VKI_CLONE_VM) == 0 && result > 0) {
         begin(TAG_FORK);
         put(result);
         end();
      }
      break;
   case __NR_fork:
   case __NR_vfork:
      if (result > 0) {
         begin(TAG_FORK);
         put(result);
         end();
      }
      break;
   case __NR_open:
   case __NR_openat:
   case __NR_creat:
      forget_fd((Long)result);
      file_of((Long)result);
      break;
   case __NR_close:
      forget_fd((Long)(Int)args[0]);
      break;
   case __NR_dup2:
   case __NR_dup3:
      forget_fd((Long)(Int)args[1]);
      break;
   case __NR_dup:
   case __NR_fcntl:
      /* a new descriptor is a number that was free: already forgotten, unless never seen */
      break;
#if defined(__NR_close_range)
   case __NR_close_range: {
      UWord last = args[1] < MAX_FDS ? args[1] : MAX_FDS - 1;
      for (UWord fd = args[0]; fd <= last; fd++)
         forget_fd((Long)fd);
      break;
   }
#endif
   default:
      break;
   }
}

/* ---- instrumentation ---- */

static IRExpr *fixed_address(void *p)
{
   return mkIRExpr_HWord((HWord)p);
}

static IRExpr *into_temp(IRSB *sb, IRType ty, IRExpr *e)
{
   IRTemp t = newIRTemp(sb->tyenv, ty);
   addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
   return IRExpr_RdTmp(t);
}

/* running.icount += pending */
static void add_instructions(IRSB *sb, ULong pending)
{
   if (pending == 0)
      return;
   IRExpr *old = into_temp(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, fixed_address(&running.icount)));
   IRExpr *sum = into_temp(sb, Ity_I64, IRExpr_Binop(Iop_Add64, old, IRExpr_Const(IRConst_U64(pending))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, fixed_address(&running.icount), sum));
}

/* One access at `addr`: opens a new record through new_page() if the page differs from the
 * open record's, then counts the access inline. */
static void add_access(IRSB *sb, IRExpr *addr, Bool is_write, ULong pending)
{
   IRExpr *page = into_temp(sb, Ity_I64, IRExpr_Binop(Iop_Shr64, addr, IRExpr_Const(IRConst_U8(PAGE_SHIFT))));
   IRExpr *open = into_temp(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, fixed_address(&running.page)));
   IRExpr *differs = into_temp(sb, Ity_I1, IRExpr_Binop(Iop_CmpNE64, page, open));
   IRDirty *call = unsafeIRDirty_0_N(2, "foliotrace_new_page", VG_(fnptr_to_fnentry)(new_page),
                                     mkIRExprVec_2(page, IRExpr_Const(IRConst_U64(pending))));
   call->guard = differs;
   /* it rewrites `running`: loads of it must not move across the call */
   call->mFx = Ifx_Modify;
   call->mAddr = fixed_address(&running);
   call->mSize = sizeof(running);
   addStmtToIRSB(sb, IRStmt_Dirty(call));
   IRExpr *count = into_temp(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, fixed_address(&running.count)));
   IRExpr *more = into_temp(sb, Ity_I64, IRExpr_Binop(Iop_Add64, count, IRExpr_Const(IRConst_U64(1))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, fixed_address(&running.count), more));
   if (is_write)
      addStmtToIRSB(sb, IRStmt_Store(Iend_LE, fixed_address(&running.write), IRExpr_Const(IRConst_U64(1))));
}

static IRSB *instrument(VgCallbackClosure *closure, IRSB *sb_in, const VexGuestLayout *layout,
                        const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                        IRType gWordTy, IRType hWordTy)
{
   if (gWordTy != Ity_I64 || hWordTy != Ity_I64)
      VG_(tool_panic)("foliotrace: only 64-bit guests and hosts are supported");
   IRSB *sb = deepCopyIRSBExceptStmts(sb_in);
   Int i = 0;
   /* the preamble before the first instruction mark is copied as it is */
   for (; i < sb_in->stmts_used && sb_in->stmts[i]->tag != Ist_IMark; i++)
      addStmtToIRSB(sb, sb_in->stmts[i]);

   ULong pending = 0; /* instructions seen and not yet added to running.icount */
   for (; i < sb_in->stmts_used; i++) {
      IRStmt *st = sb_in->stmts[i];
      if (st == NULL || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_IMark:
         pending++;
         break;
      case Ist_WrTmp:
         if (st->Ist.WrTmp.data->tag == Iex_Load)
            add_access(sb, st->Ist.WrTmp.data->Iex.Load.addr, False, pending);
         break;
      case Ist_Store:
         add_access(sb, st->Ist.Store.addr, True, pending);
         break;
      case Ist_StoreG:
         add_access(sb, st->Ist.StoreG.details->addr, True, pending);
         break;
      case Ist_LoadG:
         add_access(sb, st->Ist.LoadG.details->addr, False, pending);
         break;
      case Ist_CAS:
         add_access(sb, st->Ist.CAS.details->addr, True, pending);
         break;
      case Ist_LLSC:
         add_access(sb, st->Ist.LLSC.addr, st->Ist.LLSC.storedata != NULL, pending);
         break;
      case Ist_Dirty: {
         IRDirty *d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None)
            add_access(sb, d->mAddr, d->mFx != Ifx_Read, pending);
         break;
      }
      case Ist_Exit:
         /* the instructions so far retire whether or not the exit is taken */
         add_instructions(sb, pending);
         pending = 0;
         break;
      default:
         break;
      }
      addStmtToIRSB(sb, st);
   }
   add_instructions(sb, pending);
   return sb;
}

/* ---- start and end ---- */

static void post_clo_init(void)
{
   my_pid = VG_(getpid)();
   if (clo_out_fd < 0) {
      VG_(fmsg_bad_option)("--out-fd", "foliotrace needs --out-fd=N, the descriptor of the record stream\n");
   }
   Int fd = VG_(safe_fd)((Int)clo_out_fd);
   if (fd < 0) {
      VG_(fmsg_bad_option)("--out-fd", "descriptor %lld is not open\n", clo_out_fd);
   }
   out_fd = fd;
   begin(TAG_START);
   put(0);
   put(0);
   end();
}

static void fini(Int exitcode)
{
   if (running_tid != VG_INVALID_THREADID)
      close_record();
   for (Int tid = 0; tid < MAX_THREADS; tid++)
      if (threads[tid].known && threads[tid].alive)
         emit_exit(tid);
   begin(TAG_END);
   end();
   flush_chunk();
}

static void pre_clo_init(void)
{
   VG_(details_name)("foliotrace");
   VG_(details_version)("1");
   VG_(details_description)("page-granular memory traces for foliosim");
   VG_(details_copyright_author)("foliosim authors");
   VG_(details_bug_reports_to)("the foliosim issue tracker");
   VG_(basic_tool_funcs)(post_clo_init, instrument, fini);
   VG_(needs_command_line_options)(process_cmd_line_option, print_usage, print_debug_usage);
   VG_(needs_syscall_wrapper)(pre_syscall, post_syscall);
   VG_(track_start_client_code)(start_client_code);
   VG_(track_post_mem_write)(syscall_wrote);
   VG_(track_pre_mem_read)(syscall_reads);
   VG_(track_pre_thread_ll_create)(thread_created);
   VG_(track_pre_thread_ll_exit)(thread_exiting);
   VG_(atfork)(before_fork, NULL, in_fork_child);
}

VG_DETERMINE_INTERFACE_VERSION(pre_clo_init)

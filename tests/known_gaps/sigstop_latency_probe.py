import os, sys, time, signal, mmap, struct, socket
IDLE = sys.argv[1] == "idle"; NSPIN = int(sys.argv[2])
shm = mmap.mmap(-1, 8 * 8)
a, b = socket.socketpair()
pid = os.fork()
if pid == 0:
    import threading, numpy as np
    os.setsid()
    def spinner(i):
        x = np.ones(2_000_000); y = np.empty_like(x)
        while True:
            np.multiply(x, 1.0000001, out=y)          # releases the GIL: a CPU per spinner
            shm[8*i:8*i+8] = struct.pack("d", time.perf_counter())
    for i in range(NSPIN):
        threading.Thread(target=spinner, args=(i,), daemon=True).start()
    if IDLE:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))   # this (main) thread only
    while True:
        b.recv(1)                                      # main thread asleep, like the worker after its reply
    os._exit(0)
time.sleep(1.0)
res = []
for k in range(10):
    t = time.perf_counter()
    os.kill(-pid, signal.SIGSTOP); os.kill(pid, signal.SIGSTOP)
    time.sleep(0.3)
    last = max(struct.unpack("d", shm[8*i:8*i+8])[0] for i in range(NSPIN))
    res.append((last - t) * 1e3)
    os.kill(-pid, signal.SIGCONT); time.sleep(0.2)
os.kill(pid, signal.SIGKILL)
print(f"main {'SCHED_IDLE' if IDLE else 'normal'}, {NSPIN} spinners: helpers ran after SIGSTOP (ms):", [round(x, 2) for x in sorted(res)])

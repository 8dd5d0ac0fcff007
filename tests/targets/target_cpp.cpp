// target_cpp — a thread "busy-cpp" spinning in C++ code whose symbols need
// demangling:  busy_cpp_main -> demo::Worker::run() -> demo::compute<int>(int).
// Runs until killed.
#include "target_common.h"

namespace demo {

template <typename T> __attribute__((noinline, noipa)) T compute(T n)
{
        unsigned long acc = 1; // unsigned: wraps without undefined behaviour
        for (T i = 0; i < n; i++) {
                acc = acc * 31 + static_cast<unsigned long>(i);
                __asm__ volatile("" : "+r"(acc));
        }
        return static_cast<T>(acc);
}

class Worker {
      public:
        void run();

      private:
        volatile int sink_ = 0;
};

__attribute__((noinline, noipa)) void Worker::run()
{
        for (;;) {
                sink_ = compute<int>(20000000);
                __asm__ volatile("" ::: "memory");
        }
}

} // namespace demo

static pthread_barrier_t started;

static void *busy_cpp_main(void *)
{
        target_thread_started("busy-cpp", &started);
        demo::Worker worker;
        worker.run();
        return nullptr;
}

int main()
{
        target_check("pthread_barrier_init", pthread_barrier_init(&started, nullptr, 2));
        pthread_t busy = target_spawn(busy_cpp_main);
        pthread_barrier_wait(&started);
        target_ready();
        pthread_join(busy, nullptr);
        return 0;
}

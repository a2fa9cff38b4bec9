/* fake_cudart.c — a stand-in libcudart.so.13 for tests/gpu/fake_launch.py: a runtime "launch" that
 * calls into the stand-in libcupti, so a launch stack passes through a CUDA runtime frame the
 * way torch's launches do (the agent leaves such leading frames out). Build with -O0 so the frame
 * exists: gcc -O0 -shared -fPIC -o DIR/libcudart.so.13 fake_cudart.c -Wl,-soname,libcudart.so.13 */
#include <stdint.h>

uint32_t fake_cupti_call(int domain, uint32_t cbid, const char *name, uintptr_t func, const char *kernel,
                         int64_t ns, uint32_t nested_cbid);
uint32_t fake_cudart_launch(uintptr_t func, const char *kernel);

__attribute__((visibility("default"), noinline)) uint32_t fake_cudart_launch(uintptr_t func, const char *kernel)
{
	/* cudaLaunchKernel_v7000 in the runtime domain */
	uint32_t corr = fake_cupti_call(2, 211, "cudaLaunchKernel_v7000", func, kernel, 0, 0);
	__asm__ volatile("" ::: "memory");    /* not a tail call: this frame stays on the stack */
	return corr;
}

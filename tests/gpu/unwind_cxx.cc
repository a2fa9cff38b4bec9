// unwind_cxx.cc — C++ frames for tests/gpu/unwind_check.c: std::sort with a comparison lambda and
// a std::function, built -O2 into a shared library (libstdc++'s and our .eh_frame, exception
// tables, personality routines in the CIEs). Ends by calling leaf(arg).
#include <algorithm>
#include <functional>
#include <vector>

extern "C" {
typedef void (*leaf_fn)(void *arg);
int cxx_sort(leaf_fn leaf, void *arg, int depth);
}

static int through_function(const std::function<int(int)> &f, int n)
{
	return f(n) + 1;
}

extern "C" __attribute__((noinline)) int cxx_sort(leaf_fn leaf, void *arg, int depth)
{
	if (depth > 0)
		return through_function([&](int d) { return cxx_sort(leaf, arg, d - 1); }, depth) + 1;
	std::vector<int> v{ 5, 3, 7, 1, 8, 2, 6, 4, 9, 0 };
	bool done = false;
	std::sort(v.begin(), v.end(), [&](int a, int b) {
		if (!done) {
			done = true;
			try {
				leaf(arg);
			} catch (...) {
				throw;
			}
		}
		return a < b;
	});
	return v[0];
}

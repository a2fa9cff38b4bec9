/* test_demangle.c — the one demangling helper: C++ and CUDA kernel names demangled once per
 * model and shared, other names left alone, and the short form without the parameter list. */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "model.h"
#include "testhelp.h"

int main(void)
{
	char *d = ana_demangle("_ZN2ns5Klass6methodEiPKc");
	th_check(d && strcmp(d, "ns::Klass::method(int, char const*)") == 0, "ana_demangle: a C++ method (%s)",
	         d ? d : "NULL");
	free(d);
	th_check(ana_demangle("plain_c") == NULL && ana_demangle("_Zgarbage!") == NULL && ana_demangle(NULL) == NULL,
	         "ana_demangle: C names and garbage are left alone");

	ana_model *m = calloc(1, sizeof(*m));
	/* a CUDA kernel name as CUPTI reports it, a C kernel, and one that does not demangle */
	static const char *const texts[] = {
		"_Z11gemm_kernelIfEvPKT_S2_PS0_iii", "vector_add", "_Znot-a-name",
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	};
	for (uint32_t i = 0; i < 4; i++) {
		ana_string *s = ana_vec_push(m->strings);
		s->pid = 7;
		s->id = i + 1;
		s->text = strdup(texts[i]);
	}
	const char *k1 = ana_kernel_name(m, 7, 1);
	th_check(strcmp(k1, "void gemm_kernel<float>(float const*, float const*, float*, int, int, int)") == 0,
	         "kernel name demangled (%s)", k1);
	th_check(ana_kernel_name(m, 7, 1) == k1, "the second lookup is the cached string");
	th_check(strcmp(ana_kernel_name(m, 7, 2), "vector_add") == 0, "a C kernel keeps its name");
	th_check(strcmp(ana_kernel_name(m, 7, 3), "_Znot-a-name") == 0, "a name that does not demangle is shown as is");
	th_check(strcmp(ana_kernel_name(m, 7, 9), "?") == 0, "an unknown string id shows '?'");
	const char *k4 = ana_kernel_name(m, 7, 4);
	th_check(strncmp(k4, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>", 80) == 0,
	         "a torch kernel demangled (%s)", k4);
	th_check(ana_display_name(m, texts[0]) == k1, "the cache is by name, not by string record");
	th_check(ana_display_name(m, NULL) == NULL, "NULL stays NULL");

	/* the short form: up to the parameter list that ends the name */
	th_check(ana_name_without_params(k1) == strlen("void gemm_kernel<float>"), "short: template kernel");
	th_check(strncmp(k4 + ana_name_without_params(k4), "(int, ", 6) == 0,
	         "short: cut before the last parameter list, not inside the template arguments");
	const char *anon = "(anonymous namespace)::helper(int)";
	th_check(ana_name_without_params(anon) == strlen("(anonymous namespace)::helper"),
	         "short: '(anonymous namespace)' is not the parameter list");
	th_check(ana_name_without_params("ns::f(int) const") == strlen("ns::f"), "short: qualifiers after the list");
	th_check(ana_name_without_params("S::operator()(int)") == strlen("S::operator()"), "short: operator()");
	th_check(ana_name_without_params("vector_add") == strlen("vector_add"), "short: a C name is whole");
	th_check(ana_name_without_params("x)") == 2 && ana_name_without_params("(f)") == 3 &&
	             ana_name_without_params("") == 0,
	         "short: unbalanced or odd names are kept whole");
	ana_model_free(m);
	return th_report();
}

/* The template engine: substitution, indentation of multi-line values, and
 * failures on undefined values, unused values and missing sections. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "template.h"

static const char *path = "build/tests/scratch.tmpl";

static void load(struct template *t, const char *text)
{
	FILE *file = fopen(path, "w");
	assert_non_null(file);
	fputs(text, file);
	fclose(file);
	struct diag d = {{0}};
	assert_int_equal(template_load(t, path, &d), 0);
}

static void test_template_substitutes_inline_values(void **unused)
{
	(void)unused;
	struct template t;
	load(&t, "about the template\n//@@ call\n{{KERNEL}}_forward(ACT({{OUT}}), n);\n//@@ other\nx\n");
	struct template_vars v = {0};
	template_set(&v, "KERNEL", "conv%dx%d", 3, 3);
	template_set(&v, "OUT", "stage1_unit01_conv1");
	struct strbuf out = {0};
	struct diag d = {{0}};
	assert_int_equal(template_render(&t, "call", &v, &out, &d), 0);
	assert_string_equal(out.text, "conv3x3_forward(ACT(stage1_unit01_conv1), n);\n");
	strbuf_free(&out);
	template_vars_free(&v);
	template_free(&t);
}

static void test_template_indents_every_line_of_a_block(void **unused)
{
	(void)unused;
	struct template t;
	load(&t, "//@@ file\nvoid f(void)\n{\n\t{{BODY}}\n\t{{EMPTY}}\n}\n");
	struct template_vars v = {0};
	template_set(&v, "BODY", "a();\n\nb();\n");
	template_set(&v, "EMPTY", "%s", "");
	struct strbuf out = {0};
	struct diag d = {{0}};
	assert_int_equal(template_render(&t, "file", &v, &out, &d), 0);
	/* Blank lines stay blank; an empty block takes its line with it. */
	assert_string_equal(out.text, "void f(void)\n{\n\ta();\n\n\tb();\n}\n");
	strbuf_free(&out);
	template_vars_free(&v);
	template_free(&t);
}

static void test_template_fails_on_undefined_value(void **unused)
{
	(void)unused;
	struct template t;
	load(&t, "//@@ call\nf({{IN}}, {{OUT}});\n");
	struct template_vars v = {0};
	template_set(&v, "IN", "x");
	struct strbuf out = {0};
	struct diag d = {{0}};
	assert_int_equal(template_render(&t, "call", &v, &out, &d), -1);
	assert_string_equal(d.text, "build/tests/scratch.tmpl:2:11: placeholder {{OUT}} has no value");
	strbuf_free(&out);
	template_vars_free(&v);
	template_free(&t);
}

static void test_template_fails_on_unused_value(void **unused)
{
	(void)unused;
	struct template t;
	load(&t, "//@@ call\nf({{IN}});\n");
	struct template_vars v = {0};
	template_set(&v, "IN", "x");
	template_set(&v, "OTU", "y");
	struct strbuf out = {0};
	struct diag d = {{0}};
	assert_int_equal(template_render(&t, "call", &v, &out, &d), -1);
	assert_string_equal(d.text, "build/tests/scratch.tmpl: value {{OTU}} is given but the template "
				    "never uses it; use it or stop passing it");
	strbuf_free(&out);
	template_vars_free(&v);
	template_free(&t);
}

static void test_template_fails_on_missing_section_and_bad_placeholder(void **unused)
{
	(void)unused;
	struct template t;
	load(&t, "//@@ call\nf({{in}});\n");
	struct template_vars v = {0};
	struct strbuf out = {0};
	struct diag d = {{0}};
	assert_int_equal(template_render(&t, "kernel", &v, &out, &d), -1);
	assert_string_equal(d.text, "build/tests/scratch.tmpl: template has no section 'kernel'; add a "
				    "line '//@@ kernel'");
	assert_int_equal(template_render(&t, "call", &v, &out, &d), -1);
	assert_string_equal(d.text, "build/tests/scratch.tmpl:2:3: malformed placeholder; write "
				    "{{NAME}} with A-Z, 0-9 and _");
	strbuf_free(&out);
	template_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template_substitutes_inline_values),
		cmocka_unit_test(test_template_indents_every_line_of_a_block),
		cmocka_unit_test(test_template_fails_on_undefined_value),
		cmocka_unit_test(test_template_fails_on_unused_value),
		cmocka_unit_test(test_template_fails_on_missing_section_and_bad_placeholder),
	};
	return cmocka_run_group_tests_name("template", tests, NULL, NULL);
}

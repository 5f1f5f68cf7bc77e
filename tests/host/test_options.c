/* Host tests of the boot option parser: valid and invalid command lines. */
#include "htest.h"
#include "kernel/options.h"

DEFINE_OPTION_UINT(t_num, "num", 5, 1, 100, "a number");
DEFINE_OPTION_BOOL(t_flag, "flag", false, "a flag");
#define T_MODE_LIST(X) X(T_ALPHA, "alpha", "first") X(T_BETA, "beta", "second") X(T_GAMMA, "gamma", "third")
enum { T_MODE_LIST(OPTION_ENUM_CONST) };
#define T_VAR_LIST(X) X(T_X, "x", "ex") X(T_Y, "y", "why")
enum { T_VAR_LIST(OPTION_ENUM_CONST) };
DEFINE_OPTION_ENUM(t_mode, "mode", T_BETA, "a mode", T_MODE_LIST);
DEFINE_VARIANT_ENUM(t_var, "var", T_X, "a variant", T_VAR_LIST);
DEFINE_OPTION_STRING(t_str, "str", "dflt", "a string");
DEFINE_OPTION_UINT(t_big, "big", 0, 0, ~0ULL, "any number");

/* A hardware-dependent switch: "on" needs a feature the fake machine may lack, and any
 * value needs two CPUs once the CPU count is known. */
static bool fake_feature;
static const char *hw_check(u64 v, unsigned ncpus)
{
	if (v && !fake_feature)
		return "no such feature";
	return ncpus == 1 ? "needs two CPUs" : NULL;
}
DEFINE_VARIANT_BOOL_HW(t_hw, "hw", true, hw_check, "a hardware switch");
#define T_HWE_LIST(X) X(T_PLAIN, "plain", "no feature needed") X(T_FANCY, "fancy", "needs the feature")
enum { T_HWE_LIST(OPTION_ENUM_CONST) };
DEFINE_VARIANT_ENUM_HW(t_hwe, "hwe", T_FANCY, hw_check, "a hardware enum", T_HWE_LIST);

static char err[OPT_ERRLEN];
static bool help;

static int parse(const char *line)
{
	static char buf[512];
	options_reset();
	snprintf(buf, sizeof(buf), "%s", line);
	err[0] = 0;
	return options_parse(buf, &help, err, sizeof(err));
}

HTEST(defaults_when_empty)
{
	HT_EXPECT_EQ(parse(""), 0);
	HT_EXPECT_EQ(t_num, 5);
	HT_EXPECT(!t_flag);
	HT_EXPECT_EQ(t_mode, 1);
	HT_EXPECT(!strcmp(t_str, "dflt"));
	HT_EXPECT(!help);
}

HTEST(valid_values)
{
	HT_ASSERT(parse("num=42 flag=on mode=gamma var=y str=hello big=0x10") == 0);
	HT_EXPECT_EQ(t_num, 42);
	HT_EXPECT(t_flag);
	HT_EXPECT_EQ(t_mode, 2);
	HT_EXPECT_EQ(t_var, 1);
	HT_EXPECT(!strcmp(t_str, "hello"));
	HT_EXPECT_EQ(t_big, 16);
	HT_ASSERT(parse("  big=2M\tflag=0  ") == 0);
	HT_EXPECT_EQ(t_big, 2u << 20);
	HT_EXPECT(!t_flag);
}

HTEST(kernel_path_first_word_and_help)
{
	HT_EXPECT_EQ(parse("/boot/baremm.elf num=7"), 0);
	HT_EXPECT_EQ(t_num, 7);
	HT_EXPECT(!help);
	HT_EXPECT_EQ(parse("/boot/baremm.elf help"), 0);
	HT_EXPECT(help);
}

/* help prints and exits: any other option would be dropped, so it is refused */
HTEST(help_with_other_options_is_refused)
{
	HT_EXPECT(parse("num=7 help") != 0);
	HT_EXPECT(strstr(err, "help") && strstr(err, "num="));
	HT_EXPECT(parse("help flag=on") != 0);
	HT_EXPECT(strstr(err, "flag="));
	HT_EXPECT(parse("help help") != 0);
	HT_EXPECT(strstr(err, "twice"));
}

HTEST(vertical_tab_and_form_feed_separate_words)
{
	HT_ASSERT(parse("num=8\vflag=on\fmode=alpha") == 0);
	HT_EXPECT_EQ(t_num, 8);
	HT_EXPECT(t_flag);
	HT_EXPECT_EQ(t_mode, 0);
}

HTEST(other_control_characters_are_refused)
{
	HT_EXPECT(parse("num=8\x01" "flag=on") != 0);
	HT_EXPECT(strstr(err, "0x01") && strstr(err, "offset 5"));
	HT_EXPECT(parse("str=a\x1b" "b") != 0);
	HT_EXPECT(strstr(err, "0x1b"));
	HT_EXPECT(parse("num=8\x7f") != 0);
}

HTEST(unknown_key_is_named)
{
	HT_EXPECT(parse("num=3 nosuchoption=1") != 0);
	HT_EXPECT(strstr(err, "nosuchoption") != NULL);
	HT_EXPECT(strstr(err, "unknown") != NULL);
}

HTEST(malformed_and_out_of_range)
{
	HT_EXPECT(parse("num=abc") != 0);
	HT_EXPECT(strstr(err, "num") && strstr(err, "1..100"));
	HT_EXPECT(parse("num=0") != 0);
	HT_EXPECT(strstr(err, "out of range"));
	HT_EXPECT(parse("num=101") != 0);
	HT_EXPECT(parse("num=") != 0);
	HT_EXPECT(parse("num=99999999999999999999999") != 0);	/* overflow */
	HT_EXPECT(parse("flag=maybe") != 0);
	HT_EXPECT(strstr(err, "on|off"));
	HT_EXPECT(parse("mode=delta") != 0);
	HT_EXPECT(strstr(err, "alpha|beta|gamma"));
	HT_EXPECT(parse("str=") != 0);
	HT_EXPECT(parse("justaword") != 0);
	HT_EXPECT(strstr(err, "justaword"));
	HT_EXPECT(parse("num=1 num=2") != 0);
	HT_EXPECT(strstr(err, "twice"));
	HT_EXPECT(parse("=5") != 0);
}

HTEST(variant_flag_and_lookup)
{
	struct option_desc *o = option_find("var", 3);
	HT_ASSERT(o != NULL);
	HT_EXPECT(o->variant);
	HT_EXPECT(!option_find("mode", 4)->variant);
	char e[OPT_ERRLEN];
	HT_EXPECT_EQ(option_set(o, "y", 1, e, sizeof(e)), 0);
	HT_EXPECT_EQ(t_var, 1);
	char v[32];
	option_format_value(o, v, sizeof(v));
	HT_EXPECT(!strcmp(v, "y"));
}

HTEST(enum_from_one_list)
{
	/* the constants, the allowed values and the help text come from the same list */
	HT_EXPECT_EQ(T_GAMMA, 2);
	HT_EXPECT(!strcmp(t_mode_names[T_GAMMA], "gamma"));
	HT_EXPECT(t_mode_names[3] == NULL);
	struct option_desc *o = option_find("mode", 4);
	HT_ASSERT(o != NULL);
	HT_EXPECT(!strcmp(o->help, "a mode; alpha = first; beta = second; gamma = third"));
	HT_ASSERT(parse("mode=alpha") == 0);
	HT_EXPECT_EQ(t_mode, T_ALPHA);
}

HTEST(hardware_switch_refused_with_reason)
{
	fake_feature = false;
	HT_EXPECT(parse("hw=on") != 0);
	HT_EXPECT(strstr(err, "hw") && strstr(err, "cannot be exercised") &&
		  strstr(err, "no such feature"));
	HT_EXPECT(parse("hwe=fancy") != 0);
	HT_EXPECT(strstr(err, "no such feature"));
	HT_EXPECT_EQ(parse("hw=off hwe=plain"), 0);
	HT_EXPECT(!t_hw);
	/* an ab= value goes through option_set too */
	char e[OPT_ERRLEN];
	struct option_desc *o = option_find("hw", 2);
	HT_ASSERT(o != NULL);
	HT_EXPECT(option_set(o, "on", 2, e, sizeof(e)) != 0);
	HT_EXPECT(strstr(e, "no such feature"));
	fake_feature = true;
	HT_EXPECT_EQ(parse("hw=on"), 0);
	HT_EXPECT(t_hw);
	/* the CPU count is only known to the harness */
	HT_EXPECT(option_value_unusable(o, "off", 3, 0) == NULL);
	HT_EXPECT(option_value_unusable(o, "off", 3, 2) == NULL);
	HT_EXPECT(option_value_unusable(o, "off", 3, 1) != NULL);
	HT_EXPECT(option_value_unusable(o, "bogus", 5, 1) == NULL);
}

HTEST(default_fits_the_machine)
{
	fake_feature = false;
	HT_EXPECT_EQ(parse(""), 0);
	HT_EXPECT(t_hw);	/* the declared default */
	HT_EXPECT_EQ(t_hwe, 1);
	options_fit_machine();
	HT_EXPECT(!t_hw);	/* a default the machine cannot run becomes the other value */
	HT_EXPECT_EQ(t_hwe, 0);
	fake_feature = true;
	HT_EXPECT_EQ(parse(""), 0);
	options_fit_machine();
	HT_EXPECT(t_hw);
	HT_EXPECT_EQ(t_hwe, 1);
}

int main(void)
{
	return htest_main("options");
}

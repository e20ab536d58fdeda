/* core/text.h's number formatting: the one implementation of counts,
 * sizes and exact JSON integers that every command prints through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"

static void counts_get_thousands_separators(void **state)
{
    (void)state;
    char buf[TEXT_NUMBER_CAP];
    assert_string_equal(text_grouped(0, buf, sizeof buf), "0");
    assert_string_equal(text_grouped(241, buf, sizeof buf), "241");
    assert_string_equal(text_grouped(1000, buf, sizeof buf), "1,000");
    assert_string_equal(text_grouped(72234, buf, sizeof buf), "72,234");
    assert_string_equal(text_grouped(8030261248, buf, sizeof buf), "8,030,261,248");
    assert_string_equal(text_grouped(-1234567, buf, sizeof buf), "-1,234,567");
    assert_string_equal(text_grouped(INT64_MAX, buf, sizeof buf), "9,223,372,036,854,775,807");
    assert_string_equal(text_grouped(INT64_MIN, buf, sizeof buf), "-9,223,372,036,854,775,808");
    char small[6]; /* truncated, still terminated */
    assert_string_equal(text_grouped(1234567, small, sizeof small), "1,234");
}

static void sizes_are_binary_units_with_one_decimal(void **state)
{
    (void)state;
    char buf[TEXT_NUMBER_CAP];
    assert_string_equal(text_bytes(0, buf, sizeof buf), "0 B");
    assert_string_equal(text_bytes(964, buf, sizeof buf), "964 B");
    assert_string_equal(text_bytes(1023, buf, sizeof buf), "1023 B");
    assert_string_equal(text_bytes(1024, buf, sizeof buf), "1.0 KiB");
    assert_string_equal(text_bytes(1536, buf, sizeof buf), "1.5 KiB");
    assert_string_equal(text_bytes(288936, buf, sizeof buf), "282.2 KiB");
    assert_string_equal(text_bytes(1048575, buf, sizeof buf), "1.0 MiB"); /* not "1024.0 KiB" */
    assert_string_equal(text_bytes(16060522496ull, buf, sizeof buf), "15.0 GiB");
    assert_string_equal(text_bytes(UINT64_MAX, buf, sizeof buf), "16.0 EiB");
}

static void json_ints_are_exact_past_2_to_53(void **state)
{
    (void)state;
    static const int64_t values[] = { 0, -1, 9007199254740993, INT64_MAX, INT64_MIN };
    static const char *const want[] = { "0", "-1", "9007199254740993", "9223372036854775807",
                                        "-9223372036854775808" };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        cJSON *n = text_json_int(values[i]);
        assert_non_null(n);
        char *printed = cJSON_PrintUnformatted(n);
        assert_string_equal(printed, want[i]);
        cJSON_free(printed);
        cJSON_Delete(n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_get_thousands_separators),
        cmocka_unit_test(sizes_are_binary_units_with_one_decimal),
        cmocka_unit_test(json_ints_are_exact_past_2_to_53),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

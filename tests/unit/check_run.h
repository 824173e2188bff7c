/* Runs a Check suite for the unit-test programs: prints the counts and
 * returns the program's exit status. */
#ifndef CHECK_RUN_H
#define CHECK_RUN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static inline int check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int run = srunner_ntests_run(sr);
    srunner_free(sr);
    printf("%d passed, %d failed\n", run - failed, failed);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif

/* mtk: the command line. */
#include "mtk/mtk.h"

#include <stdio.h>

int main(void)
{
    printf("mtk %s\n", MTK_VERSION_STRING);
    return 0;
}

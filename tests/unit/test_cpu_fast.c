/* The fast cpu paths of issue 3's performance work: the shared
 * parallel-for (core/parallel.c), the contiguous last-dim softmax /
 * log_softmax / layer_norm / rms_norm kernels (ops/nn_fast.c), the
 * contiguous float32 add/sub/mul path and threading of the element-wise
 * engine, and the stride-2 im2col of the convolutions.  Expected values
 * were computed by torch 2.13 on the same inputs (fill() below is the
 * formula of bench/bench_cpu_kernels.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mtk/mtk.h"
#include "core/parallel.h"
#include "core/scalar.h"

/* ---------------------------------------------------------------- helpers */

/* Deterministic value in [-0.5, 0.5) for element i of input `seed`. */
static double fill(uint64_t i, uint64_t seed)
{
    uint64_t h = ((i + seed * 7919u) * 2654435761u) & 0xffffffffu;
    return (double)h / 4294967296.0 - 0.5;
}

static mtk_tensor *filled(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape, int32_t ndim, uint64_t seed,
                          double scale)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    int64_t n = mtk_tensor_numel(t);
    char *d = mtk_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        /* torch's fill: the double value rounded to float32 first */
        float v = (float)(fill((uint64_t)i, seed) * scale);
        mtk_store_f64(dtype, d + i * (int64_t)mtk_dtype_size(dtype), (double)v);
    }
    return t;
}

static void assert_values(const mtk_tensor *t, const double *want, int64_t n, double rtol, double atol)
{
    if (!t) fail_msg("no tensor");
    assert_int_equal(mtk_tensor_numel(t), n);
    const char *d = mtk_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        double got = mtk_load_f64(t->dtype, d + i * (int64_t)mtk_dtype_size(t->dtype));
        if (isnan(want[i])) {
            if (!isnan(got)) fail_msg("element %lld: got %.9g, want nan", (long long)i, got);
        } else if (!(fabs(got - want[i]) <= atol + rtol * fabs(want[i]))) {
            fail_msg("element %lld: got %.9g, want %.9g", (long long)i, got, want[i]);
        }
    }
}

/* torch 2.13's results on the inputs of the tests below */
static const double softmax_3x37[] = {
    0.000406365492, 0.0570409559, 0.0026859683, 0.000126478044, 0.0177535433, 0.000835986284, 0.117346257,
    0.00552564953, 0.00026019424, 0.0365230888, 0.00171981507, 8.09833509e-05, 0.0113675222, 0.000535278756,
    0.0751363263, 0.00353805069, 0.000166601269, 0.0233855862, 0.00110119022, 0.154572561, 0.00727857789,
    0.000342736865, 0.048109483, 0.00226540002, 0.000106674081, 0.0149736935, 0.000705087732, 0.098972179,
    0.00466044387, 0.000219452952, 0.0308043044, 0.00145052606, 0.203608349, 0.00958759524, 0.000451464904,
    0.0633714795, 0.00298406347, 0.000167051578, 0.0234487951, 0.00110416673, 0.15499036, 0.00729825161,
    0.000343663269, 0.0482395217, 0.00227152323, 0.00010696242, 0.0150141669, 0.000706993567, 0.0992396921,
    0.00467304047, 0.000220046131, 0.0308875665, 0.0014544467, 0.204158694, 0.00961351022, 0.000452685199,
    0.0635427684, 0.00299212919, 0.000140894597, 0.0197771825, 0.000931276474, 0.130721986, 0.00615549088,
    0.000289852411, 0.0406861752, 0.00191584777, 9.02142638e-05, 0.0126632489, 0.000596292666, 0.0837007463,
    0.00394133572, 0.000185591271, 0.0260511898, 0.00122670969, 0.134079158, 0.00631357543, 0.000297296414,
    0.0417310745, 0.00196505059, 9.25311106e-05, 0.012988464, 0.000611606403, 0.0858503282, 0.00404255651,
    0.000190357634, 0.0267202333, 0.00125821366, 0.176613718, 0.008316461, 0.000391609181, 0.0549696162,
    0.00258843275, 0.000121885183, 0.0171088558, 0.000805629184, 0.113085046, 0.00532499561, 0.000250745681,
    0.0351968184, 0.00165736268, 7.80426053e-05, 0.0109547311, 0.000515840948, 0.0724078864, 0.00340957288,
    0.000160551397, 0.0225363784, 0.00106120273, 0.148959547, 0.00701426901, 0.000330290932
};
static const double log_softmax_3x37[] = {
    -7.80825758, -2.86398554, -5.91971397, -8.97544193, -4.03116989, -7.08689833, -2.14262629, -5.19835424,
    -8.25408173, -3.30981064, -6.3655386, -9.42126656, -4.47699499, -7.53272295, -2.58845091, -5.64417934,
    -8.6999073, -3.75563526, -6.8113637, -1.86709154, -4.92281961, -7.97854757, -3.03427601, -6.09000397,
    -9.14573193, -4.20146036, -7.25718832, -2.31291628, -5.36864471, -8.42437267, -3.48010063, -6.53582907,
    -1.59155691, -4.64728498, -7.70301294, -2.75874138, -5.81446934, -8.6972084, -3.75293612, -6.80866432,
    -1.86439228, -4.92012024, -7.9758482, -3.03157663, -6.08730459, -9.14303303, -4.19876099, -7.25448895,
    -2.31021714, -5.36594534, -8.42167282, -3.47740149, -6.53312969, -1.58885765, -4.64458561, -7.70031357,
    -2.756042, -5.81176996, -8.8674984, -3.92322636, -6.97895432, -2.03468251, -5.09041071, -8.14613914,
    -3.20186687, -6.25759506, -9.31332302, -4.36905098, -7.42477894, -2.48050737, -5.53623581, -8.59196377,
    -3.64769173, -6.70341969, -2.00932503, -5.06505299, -8.12078094, -3.17650938, -6.23223734, -9.28796577,
    -4.34369373, -7.39942169, -2.45514965, -5.51087809, -8.56660557, -3.622334, -6.67806244, -1.73379028,
    -4.78951836, -7.84524632, -2.90097475, -5.95670271, -9.01243114, -4.0681591, -7.12388706, -2.17961502,
    -5.23534346, -8.29107094, -3.34679937, -6.40252781, -9.45825577, -4.51398373, -7.56971216, -2.62544012,
    -5.68116808, -8.73689651, -3.79262447, -6.84835243, -1.90408051, -4.95980883, -8.01553631
};
static const double softmax_special[] = {
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0.875600576, 0.118499652, 0.00589975016
};
static const double log_softmax_special[] = {
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, -0.132845268, -2.13284516, -5.1328454
};
static const double softmax_f16[] = {
    0.00476455688, 0.000481843948, 0.0196533203, 0.00198554993, 0.0810546875, 0.00818634033, 0.000827789307,
    0.0337524414, 0.00341033936, 0.139160156, 0.0140609741, 0.00142192841, 0.0579223633, 0.005859375,
    0.000592708588, 0.0241699219, 0.0024433136, 0.0994873047, 0.0100631714, 0.00101852417, 0.0415039062,
    0.00419235229, 0.000423669815, 0.017288208, 0.00174713135, 0.0712280273, 0.00720596313, 0.000727653503,
    0.0296936035, 0.00300216675, 0.122375488, 0.0123748779, 0.0012512207, 0.0510253906, 0.0051574707,
    0.000521183014, 0.021270752, 0.00214958191, 0.0876464844, 0.00885772705, 0.000877857208, 0.0358276367,
    0.00362014771, 0.147583008, 0.0149230957, 0.00150966644, 0.0615234375, 0.00621795654, 0.000628471375,
    0.0256195068, 0.00259208679, 0.105712891, 0.0106811523, 0.00107955933, 0.0440063477, 0.00445175171,
    0.000450134277, 0.0183563232, 0.00185489655, 0.0756835938, 0.00764465332, 0.000772953033, 0.0315246582,
    0.00318527222, 0.130004883, 0.013130188, 0.00132751465, 0.0541381836, 0.00547409058, 0.000553607941,
    0.022567749, 0.00228118896, 0.0928955078, 0.00939941406, 0.000950813293, 0.0387573242, 0.00391769409,
    0.000395536423, 0.0161437988, 0.00163173676
};
static const double softmax_bf16[] = {
    0.00476074219, 0.000478744507, 0.0196533203, 0.00198364258, 0.0805664062, 0.00817871094, 0.000823974609,
    0.0336914062, 0.00340270996, 0.138671875, 0.0140991211, 0.00141906738, 0.0578613281, 0.005859375,
    0.000595092773, 0.0241699219, 0.00244140625, 0.100097656, 0.0100708008, 0.00101470947, 0.0412597656,
    0.0041809082, 0.000421524048, 0.0173339844, 0.00174713135, 0.0708007812, 0.00720214844, 0.000728607178,
    0.0297851562, 0.00299072266, 0.122558594, 0.0123901367, 0.0012512207, 0.0510253906, 0.0051574707,
    0.000526428223, 0.0212402344, 0.00213623047, 0.0883789062, 0.00885009766, 0.000877380371, 0.0358886719,
    0.00361633301, 0.147460938, 0.0149536133, 0.00151062012, 0.0612792969, 0.00622558594, 0.000629425049,
    0.0256347656, 0.00259399414, 0.105957031, 0.0106811523, 0.00108337402, 0.0439453125, 0.00445556641,
    0.000448226929, 0.0183105469, 0.00185394287, 0.0751953125, 0.00762939453, 0.000774383545, 0.0314941406,
    0.00318908691, 0.129882812, 0.0131225586, 0.00132751465, 0.0541992188, 0.00546264648, 0.000556945801,
    0.0225830078, 0.00227355957, 0.09375, 0.00939941406, 0.000946044922, 0.0388183594, 0.00390625,
    0.000394821167, 0.0161132812, 0.00163269043
};
static const double layer_norm_4x33[] = {
    0.0907654241, -0.755962789, 0.512221873, 0.262407154, -1.18637896, 0.678719163, -0.413950741, 0.930234075,
    0.75641942, -0.938308299, 0.282905668, -0.0138798729, -1.31066549, 0.308490664, -0.632178783, 0.665035248,
    0.444250017, -1.09847736, 0.918620944, -0.267990321, 1.10522401, -0.0395611823, -0.828230202, 0.422013164,
    0.154257134, -1.23646975, 0.534686625, -0.499924093, 0.826319337, 0.634563565, -1.00210512, 0.201167539,
    -0.113559186, -2.57622075, 0.679101527, -0.660780847, 2.00543594, 0.0496930741, -2.1872251, 1.14078987,
    -0.434330404, 2.61250925, 0.421528459, -0.772968948, 1.65801001, -0.152347848, -2.43419242, 0.848895967,
    -0.580839217, 2.23076248, 0.185166806, -2.02398539, 1.33179557, -0.333177418, -2.65994835, 0.578213573,
    -0.706136644, 1.87022722, -0.0299834926, -2.28406191, 1.02679241, -0.492795527, 2.46419096, 0.328742504,
    -0.810222685, 1.53090334, -0.77298528, -1.33901072, 0.126052678, -0.49081549, 1.16786468, -0.255386859,
    -1.0607357, 0.478282779, -0.0646304265, 1.66800463, -0.0633892119, -0.725964069, 0.887009323, -0.581948876,
    -1.23938775, 0.253924012, -0.334695876, 1.35223246, -0.0427707545, -0.939532995, 0.627733767, -0.886931121,
    -1.39645994, 0.0511450768, -0.58318156, 1.05804014, -0.382669836, -1.13152194, 0.390038013, -0.170333594,
    1.54484308, -0.130054101, -0.810087502, 0.925718725, -0.122877143, -1.1576829, 1.02356303, -0.637799501,
    1.55723679, 0.269317329, -1.00481188, 1.56366742, -0.33701846, 0.599768102, 0.718008339, -0.795444191,
    1.16026855, 0.0202591866, -1.10596001, 1.22319603, -0.529579997, 1.81336617, 0.434033424, -0.931509137,
    0.784880102, -0.207219139, -1.18552828, 0.904304206, -0.700561643, 1.40306079, 0.171638265, -1.04599428,
    1.43107152, -0.413117677, 0.506210327, 0.606992245
};
static const double rms_norm_4x33[] = {
    0.638558149, -0.851591408, 0.763645709, -0.0532231592, -1.14664757, 1.14187026, -0.593468964, 1.09753597,
    0.356434762, -0.982179105, 0.586230934, -0.277465075, -1.2193538, 0.823974133, -0.759829462, 0.884348452,
    0.0964201912, -1.09065831, 1.34939492, -0.479598284, 1.24034739, 0.528186858, -0.904081106, 0.69326961,
    -0.141485691, -1.17702854, 1.0178349, -0.65962261, 1.0134958, 0.254508317, -1.02622414, 0.524299562,
    -0.357282817, -2.16413474, 0.481704265, -0.466601551, 1.56588411, 0.00189944217, -1.86759913, 0.850910962,
    -0.332563281, 2.08043289, 0.281279773, -0.521683931, 1.27563334, -0.143009275, -2.05742073, 0.61617583,
    -0.421956241, 1.75587153, 0.10206043, -1.73968029, 1.00658762, -0.266712904, -2.22603774, 0.402645856,
    -0.490144104, 1.45251513, -0.0559537858, -1.94260752, 0.758747041, -0.369211346, 1.95395839, 0.210321039,
    -0.53712678, 1.1703639, -0.356509864, -1.53239644, 0.322164685, -0.925294936, 1.12284184, 0.0689578503,
    -1.34620142, 0.582299113, -0.591221213, 1.53085482, 0.189635068, -1.10352159, 0.898918033, -0.200662866,
    -1.46794331, 0.41486004, -0.80435729, 1.27202177, 0.246380061, -1.26017308, 0.696569622, -0.448708415,
    -1.56811011, 0.268996209, -0.995918155, 1.03476381, -0.0365748927, -1.39524925, 0.515796304, -0.675178707,
    1.42944264, 0.144707561, -1.16590381, 1.48338819, -0.210464567, -0.894483447, 0.717199326, -0.590931296,
    2.03058529, 0.0983431563, -0.824065208, 1.17333961, -0.373180211, 0.90669924, 0.463426948, -0.697370768,
    1.68575633, -0.0991530791, -0.874228597, 0.884786904, -0.514400303, 2.25444889, 0.231150195, -0.782314777,
    1.36242282, -0.275153726, -0.902896464, 0.617729545, -0.634124815, 1.89633489, 0.0203689672, -0.845763147,
    1.06058502, -0.4296588, 0.832830369, 0.372167766
};
static const double layer_norm_f64[] = {
    0.535059214, -0.929702894, 0.720447724, -0.147401022, -1.214221, 1.03284302, -0.677860898, 1.04828995,
    0.256441323, -1.05632035, 0.546859564, -0.367959925, -1.28277944, 0.718342633, -0.840360796, 0.838819283,
    7.45511958e-09, -1.1607613, 1.23830291, -0.566342287, 1.18883805, 0.426018887, -0.980684112, 0.651525267,
    -0.234264767, -1.2430256, 0.910096731, -0.742547977, 0.96566152, 0.155871715, -1.09883092, 0.486407752,
    -0.446352969, -2.13192717, 0.505361401, -0.452555096, 1.59562799, 0.0218509164, -1.83310143, 0.876879779,
    -0.316274569, 2.11253124, 0.303516398, -0.509015097, 1.30393016, -0.124461926, -2.0243406, 0.640714018,
    -0.40705527, 1.78651268, 0.12288282, -1.70430349, 1.03344371, -0.249563393, -2.19436854, 0.425759663,
    -0.476624615, 1.4817055, -0.0365393778, -1.90865202, 0.784168605, -0.353453428, 1.98549938, 0.232016729,
    -0.524982516, 1.19810971, -0.328691425, -1.51275109, 0.334278562, -0.90062366, 1.14002262, 0.0987370537,
    -1.32464598, 0.596338706, -0.564608537, 1.54999267, 0.200564754, -1.08004423, 0.914895336, -0.172096891,
    -1.44756988, 0.427708041, -0.778945906, 1.28994865, 0.276911352, -1.23788501, 0.71134791, -0.421351063,
    -1.54891398, 0.280657206, -0.971703498, 1.05148433, -0.00725963718, -1.37414586, 0.529380248, -0.649025424,
    1.44811741, 0.155186131, -1.14288131, 1.3700125, -0.296617377, -0.949457188, 0.613754881, -0.66564171,
    1.9113605, 0.00540716302, -0.886756061, 1.0636893, -0.455030567, 0.863721981, 0.363928264, -0.767558277,
    1.57012034, -0.187922855, -0.932176004, 0.778945945, -0.591863975, 2.13304811, 0.13568144, -0.847895114,
    1.25046012, -0.359673078, -0.956016248, 0.515782303, -0.707117575, 1.77847091, -0.0709856028, -0.906652091,
    0.952379739, -0.509843511, 0.791450543, 0.274198438
};
static const double conv_s2_first[] = {
    -0.0963782221, -0.17428416, 0.653347731, 0.300639719, -0.197966263, -0.224436313, 0.603195608, 0.250487626
};
static const double conv_s2_last[] = {
    -0.225955144, -0.0504748821, 0.382359654, -0.386431932, -0.472605675, -0.241397321, 0.346190989,
    -0.422600597
};

/* ------------------------------------------------------------ parallel */

typedef struct coverage {
    atomic_int hits[1000];
    atomic_int bad_part;
    int32_t parts;
} coverage;

static void mark_range(int64_t begin, int64_t end, int32_t part, void *user)
{
    coverage *c = user;
    if (part < 0 || part >= c->parts) atomic_fetch_add(&c->bad_part, 1);
    for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void mark_task(int64_t i, int32_t worker, void *user) { mark_range(i, i + 1, worker, user); }

static void parallel_range_and_tasks_visit_every_index_once(void **state)
{
    (void)state;
    static coverage c;
    int32_t counts[] = { 1, 2, 3, 7, 64 };
    for (int mode = 0; mode < 2; mode++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            memset(&c, 0, sizeof c);
            c.parts = counts[k];
            if (mode == 0) mtk_parallel_range(1000, counts[k], mark_range, &c);
            else mtk_parallel_tasks(1000, counts[k], mark_task, &c);
            for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c.hits[i]), 1);
            assert_int_equal(atomic_load(&c.bad_part), 0);
        }
    /* nothing to do: no call */
    memset(&c, 0, sizeof c);
    c.parts = 2;
    mtk_parallel_range(0, 2, mark_range, &c);
    mtk_parallel_tasks(-1, 2, mark_task, &c);
    for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c.hits[i]), 0);
}

/* The worker pool: many calls of every size in a row, calls nested in a
 * task and calls from several user threads at once each run every index
 * exactly once; so does a call in a forked child. */
typedef struct nested {
    coverage inner[4];
} nested;

static void run_inner(int64_t i, int32_t worker, void *user)
{
    (void)worker;
    nested *n = user;
    n->inner[i].parts = 3;
    mtk_parallel_tasks(1000, 3, mark_task, &n->inner[i]);
}

static void *caller_thread(void *arg)
{
    coverage *c = arg;
    for (int r = 0; r < 50; r++) mtk_parallel_range(1000, 1 + r % 4, mark_range, c);
    return NULL;
}

static void parallel_pool_survives_repeats_nesting_threads_and_fork(void **state)
{
    (void)state;
    static coverage c;
    for (int r = 0; r < 300; r++) {
        memset(&c, 0, sizeof c);
        c.parts = 1 + r % 9;
        if (r % 2) mtk_parallel_range(1000, c.parts, mark_range, &c);
        else mtk_parallel_tasks(1000, c.parts, mark_task, &c);
        for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c.hits[i]), 1);
        assert_int_equal(atomic_load(&c.bad_part), 0);
        if (r % 50 == 49) usleep(2000); /* past the workers' spin: they sleep, and wake again */
    }
    static nested n;
    memset(&n, 0, sizeof n);
    mtk_parallel_tasks(4, 2, run_inner, &n);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&n.inner[k].hits[i]), 1);
    static coverage per_thread[3];
    memset(per_thread, 0, sizeof per_thread);
    pthread_t ids[3];
    for (int t = 0; t < 3; t++) {
        per_thread[t].parts = 4;
        assert_int_equal(pthread_create(&ids[t], NULL, caller_thread, &per_thread[t]), 0);
    }
    for (int t = 0; t < 3; t++) pthread_join(ids[t], NULL);
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&per_thread[t].hits[i]), 50);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        memset(&c, 0, sizeof c);
        c.parts = 2;
        mtk_parallel_tasks(1000, 2, mark_task, &c);
        int ok = 1;
        for (int i = 0; i < 1000; i++) ok &= atomic_load(&c.hits[i]) == 1;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A task long enough that the caller, done with its own, sleeps until the
 * worker finishes (past the spin), and still sees every index. */
static void slow_mark(int64_t begin, int64_t end, int32_t part, void *user)
{
    if (part == 1) usleep(5000);
    mark_range(begin, end, part, user);
}

static void parallel_caller_waits_for_a_slow_worker(void **state)
{
    (void)state;
    static coverage c;
    memset(&c, 0, sizeof c);
    c.parts = 2;
    mtk_parallel_range(1000, 2, slow_mark, &c);
    for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c.hits[i]), 1);
}

static void parallel_threads_resolve_settings(void **state)
{
    (void)state;
    assert_int_equal(mtk_parallel_threads(3), 3);
    assert_int_equal(mtk_parallel_threads(100000), MTK_PARALLEL_MAX_THREADS);
    assert_true(mtk_parallel_threads(0) >= 1);
    /* the count in scope (the dispatcher's, from the context) is the default */
    int32_t previous = mtk_parallel_scope_begin(5);
    assert_int_equal(mtk_parallel_threads(0), 5);
    assert_int_equal(mtk_parallel_threads(2), 2);
    mtk_parallel_scope_end(previous);
    assert_true(mtk_parallel_threads(-1) >= 1);
}

/* One setting on the context for every kernel family, read back; two
 * contexts do not share it. */
static void thread_count_is_one_setting_per_context(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new(), *other = mtk_ctx_new();
    assert_int_equal(mtk_ctx_num_threads(ctx), mtk_parallel_threads(0)); /* default: online cores */
    mtk_ctx_set_num_threads(ctx, 3);
    assert_int_equal(mtk_ctx_num_threads(ctx), 3);
    assert_int_equal(mtk_ctx_num_threads(other), mtk_parallel_threads(0));
    mtk_ctx_set_num_threads(ctx, 100000);
    assert_int_equal(mtk_ctx_num_threads(ctx), MTK_PARALLEL_MAX_THREADS);
    mtk_ctx_set_num_threads(ctx, 0);
    assert_true(mtk_ctx_num_threads(ctx) >= 1);
    mtk_ctx_free(other);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------- softmax */

static void softmax_last_dim_matches_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[2] = { 3, 37 }; /* rows longer than one vector step, with tails */
    mtk_tensor *x = filled(ctx, MTK_FLOAT32, shape, 2, 1, 8.0);
    assert_values(mtk_softmax(ctx, x, -1, MTK_DTYPE_UNDEFINED), softmax_3x37, 111, 1e-5, 1e-7);
    assert_values(mtk_log_softmax(ctx, x, 1, MTK_DTYPE_UNDEFINED), log_softmax_3x37, 111, 1e-5, 1e-6);
    mtk_ctx_free(ctx);
}

static void softmax_rows_with_inf_or_nan_give_torch_nans(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float data[12] = { 1, INFINITY, 2, -INFINITY, -INFINITY, -INFINITY, 0.5f, NAN, 1, 3, 1, -2 };
    int64_t shape[2] = { 4, 3 };
    mtk_tensor *x = mtk_tensor_from_data(ctx, MTK_FLOAT32, shape, 2, NULL, data);
    assert_values(mtk_softmax(ctx, x, -1, MTK_DTYPE_UNDEFINED), softmax_special, 12, 1e-5, 1e-7);
    assert_values(mtk_log_softmax(ctx, x, -1, MTK_DTYPE_UNDEFINED), log_softmax_special, 12, 1e-5, 1e-6);
    mtk_ctx_free(ctx);
}

static void softmax_half_dtypes_round_once_like_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[2] = { 2, 40 };
    mtk_tensor *h = filled(ctx, MTK_FLOAT16, shape, 2, 2, 6.0);
    mtk_tensor *b = filled(ctx, MTK_BFLOAT16, shape, 2, 2, 6.0);
    mtk_tensor *yh = mtk_softmax(ctx, h, -1, MTK_DTYPE_UNDEFINED), *yb = mtk_softmax(ctx, b, -1, MTK_DTYPE_UNDEFINED);
    assert_int_equal(yh->dtype, MTK_FLOAT16);
    assert_values(yh, softmax_f16, 80, 1e-3, 1e-5);
    assert_values(yb, softmax_bf16, 80, 8e-3, 1e-5);
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------- layer_norm */

static void layer_norm_and_rms_norm_last_dim_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[2] = { 4, 33 }, ns[1] = { 33 };
    mtk_tensor *x = filled(ctx, MTK_FLOAT32, shape, 2, 3, 4.0);
    mtk_tensor *w = filled(ctx, MTK_FLOAT32, ns, 1, 4, 1.0), *b = filled(ctx, MTK_FLOAT32, ns, 1, 5, 1.0);
    /* w = fill + 1 */
    float *wd = mtk_tensor_data(w);
    for (int i = 0; i < 33; i++) wd[i] = (float)(fill((uint64_t)i, 4) + 1.0);
    assert_values(mtk_layer_norm(ctx, x, ns, 1, w, b, 1e-5), layer_norm_4x33, 132, 1e-5, 1e-6);
    assert_values(mtk_rms_norm(ctx, x, ns, 1, w, 1e-6), rms_norm_4x33, 132, 1e-5, 1e-6);
    mtk_tensor *x64 = mtk_to_dtype(ctx, x, MTK_FLOAT64), *w64 = mtk_to_dtype(ctx, w, MTK_FLOAT64);
    assert_values(mtk_layer_norm(ctx, x64, ns, 1, w64, NULL, 1e-5), layer_norm_f64, 132, 1e-8, 1e-9);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------ add & co */

static double sum_of(const mtk_tensor *t)
{
    const float *d = mtk_tensor_data(t);
    double s = 0;
    for (int64_t i = 0; i < mtk_tensor_numel(t); i++) s += d[i];
    return s;
}

static void big_float32_add_sub_mul_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[1] = { 300001 }; /* above the threading threshold, odd length */
    mtk_tensor *a = filled(ctx, MTK_FLOAT32, shape, 1, 8, 1.0), *b = filled(ctx, MTK_FLOAT32, shape, 1, 9, 1.0);
    for (int32_t threads = 1; threads <= 3; threads += 2) {
        mtk_ctx_set_num_threads(ctx, threads);
        mtk_tensor *add = mtk_add(ctx, a, b), *sub = mtk_sub(ctx, a, b), *mul = mtk_mul(ctx, a, b);
        assert_non_null(add);
        assert_non_null(sub);
        assert_non_null(mul);
        assert_float_equal(sum_of(add), -0.440379723907, 1e-6);
        assert_float_equal(sum_of(sub), 2.41680422425, 1e-6);
        assert_float_equal(sum_of(mul), 15.2435535834, 1e-6);
        assert_float_equal(((const float *)mtk_tensor_data(add))[300000], -0.0185359716, 1e-9);
        /* through the general engine (a non-contiguous operand) as well */
        mtk_tensor *a2 = mtk_tensor_new(ctx, MTK_FLOAT32, (const int64_t[]){ 300001, 2 }, 2, NULL, MTK_DEVICE_CPU);
        assert_true(mtk_tensor_alloc_storage(a2));
        float *ad = mtk_tensor_data(a2);
        for (int64_t i = 0; i < 300001; i++) ad[2 * i] = ((const float *)mtk_tensor_data(a))[i], ad[2 * i + 1] = 0;
        mtk_tensor *col = mtk_select(ctx, a2, 1, 0);
        assert_non_null(col);
        assert_float_equal(sum_of(mtk_contiguous(ctx, mtk_add(ctx, col, b))), -0.440379723907, 1e-6);
    }
    mtk_ctx_set_num_threads(ctx, 0);
    mtk_ctx_free(ctx);
}

/* --------------------------------------------------------------- conv */

static void stride2_conv_matches_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t xs[4] = { 1, 2, 40, 40 }, ws[4] = { 3, 2, 3, 3 };
    mtk_tensor *x = filled(ctx, MTK_FLOAT32, xs, 4, 6, 1.0), *w = filled(ctx, MTK_FLOAT32, ws, 4, 7, 1.0);
    for (int32_t threads = 1; threads <= 2; threads++) { /* batch 1 on 2 threads: split columns */
        mtk_ctx_set_num_threads(ctx, threads);
        mtk_conv_args args = mtk_conv_args_default();
        args.stride[0] = args.stride[1] = 2;
        args.padding[0] = args.padding[1] = 1;
        mtk_tensor *y = mtk_conv2d(ctx, x, w, NULL, &args);
        assert_non_null(y);
        assert_int_equal(mtk_tensor_numel(y), 1200);
        const float *d = mtk_tensor_data(y);
        double abs_sum = 0;
        for (int i = 0; i < 1200; i++) abs_sum += fabs(d[i]);
        assert_float_equal(abs_sum, 449.741016, 1e-4);
        for (int i = 0; i < 8; i++) {
            assert_float_equal(d[i], conv_s2_first[i], 1e-5);
            assert_float_equal(d[1192 + i], conv_s2_last[i], 1e-5);
        }
    }
    mtk_ctx_set_num_threads(ctx, 0);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parallel_range_and_tasks_visit_every_index_once),
        cmocka_unit_test(parallel_pool_survives_repeats_nesting_threads_and_fork),
        cmocka_unit_test(parallel_caller_waits_for_a_slow_worker),
        cmocka_unit_test(parallel_threads_resolve_settings),
        cmocka_unit_test(thread_count_is_one_setting_per_context),
        cmocka_unit_test(softmax_last_dim_matches_torch),
        cmocka_unit_test(softmax_rows_with_inf_or_nan_give_torch_nans),
        cmocka_unit_test(softmax_half_dtypes_round_once_like_torch),
        cmocka_unit_test(layer_norm_and_rms_norm_last_dim_match_torch),
        cmocka_unit_test(big_float32_add_sub_mul_match_torch),
        cmocka_unit_test(stride2_conv_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

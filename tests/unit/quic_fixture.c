/*
 * Fixtures shared by the dp_quic tests (test_dp_quic.c, test_dp_quic_crypto.c,
 * test_dp_quic_bad.c): the RFC vectors, fixed real Initials, a client flow, an Initial
 * sealer built on the module's own key derivation, and the UDP payload of a captured frame.
 * Failures go through cmocka, so these may only be called from inside a running test.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "dp_quic.h"
#include "quic_fixture.h"
#include "tls_fixture.h"

struct dp_quic_ctx *qf_ctx;
struct qf_flow qf_fl;

/* RFC 9001 A.2 and RFC 9369 A.2: the client's Initial, protected; then its CRYPTO frame. */
const char qf_rfc9001_a2_hex[] =
	"c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11d242b123dc9bd8ba"
	"b936b47d92ec356c0bab7df5976d27cd449f63300099f3991c260ec4c60d17b31f8429157bb35a12"
	"82a643a8d2262cad67500cadb8e7378c8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6"
	"005f80fcb7df621230c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5"
	"457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c2084dce25ff9b06cde5"
	"35d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec4e15daf8500a6ef69ec4e3feb6b1d98e"
	"610ac8b7ec3faf6ad760b7bad1db4ba3485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e3"
	"0c5c4287e53805db059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c"
	"7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f89937f5a67258bf63"
	"ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556be52afe3f565636ad1b17d508b73d874"
	"3eeb524be22b3dcbc2c7468d54119c7468449a13d8e3b95811a198f3491de3e7fe942b330407abf8"
	"2a4ed7c1b311663ac69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00"
	"f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632291d6a418211cc29"
	"62e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe5896425c5bac4aee82e57a85aaf4e2513e4f0"
	"5796b07ba2ee47d80506f8d2c25e50fd14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c"
	"1f28ff18f58891ffef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198"
	"e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009ddc324044e847a4f4a"
	"0ab34f719595de37252d6235365e9b84392b061085349d73203a4a13e96f5432ec0fd4a1ee65accd"
	"d5e3904df54c1da510b0ff20dcc0c77fcb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de3"
	"54270123cb11450efc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade"
	"a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e72404790a2181014f3b94a"
	"4e97d117b438130368cc39dbb2d198065ae3986547926cd2162f40a29f0c3c8745c0f50fba3852e5"
	"66d44575c29d39a03f0cda721984b6f440591f355e12d439ff150aab7613499dbd49adabc8676eef"
	"023b15b65bfc5ca06948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e"
	"8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0be79e2fb8f5d5fbb"
	"e2e30ecadd220723c8c0aea8078cdfcb3868263ff8f0940054da48781893a7e49ad5aff4af300cd8"
	"04a6b6279ab3ff3afb64491c85194aab760d58a606654f9f4400e8b38591356fbf6425aca26dc852"
	"44259ff2b19c41b9f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4"
	"056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd46840647e78bfe706ca4cf5"
	"e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241e221af44860018ab0856972e194cd934";

const char qf_rfc9369_a2_hex[] =
	"d76b3343cf088394c8f03e5157080000449ea0c95e82ffe67b6abcdb4298b485dd04de806071bf03"
	"dceebfa162e75d6c96058bdbfb127cdfcbf903388e99ad049f9a3dd4425ae4d0992cfff18ecf0fdb"
	"5a842d09747052f17ac2053d21f57c5d250f2c4f0e0202b70785b7946e992e58a59ac52dea6774d4"
	"f03b55545243cf1a12834e3f249a78d395e0d18f4d766004f1a2674802a747eaa901c3f10cda5500"
	"cb9122faa9f1df66c392079a1b40f0de1c6054196a11cbea40afb6ef5253cd6818f6625efce3b6de"
	"f6ba7e4b37a40f7732e093daa7d52190935b8da58976ff3312ae50b187c1433c0f028edcc4c2838b"
	"6a9bfc226ca4b4530e7a4ccee1bfa2a3d396ae5a3fb512384b2fdd851f784a65e03f2c4fbe11a53c"
	"7777c023462239dd6f7521a3f6c7d5dd3ec9b3f233773d4b46d23cc375eb198c63301c21801f6520"
	"bcfb7966fc49b393f0061d974a2706df8c4a9449f11d7f3d2dcbb90c6b877045636e7c0c0fe4eb0f"
	"697545460c806910d2c355f1d253bc9d2452aaa549e27a1fac7cf4ed77f322e8fa894b6a83810a34"
	"b361901751a6f5eb65a0326e07de7c1216ccce2d0193f958bb3850a833f7ae432b65bc5a53975c15"
	"5aa4bcb4f7b2c4e54df16efaf6ddea94e2c50b4cd1dfe06017e0e9d02900cffe1935e0491d77ffb4"
	"fdf85290fdd893d577b1131a610ef6a5c32b2ee0293617a37cbb08b847741c3b8017c25ca9052ca1"
	"079d8b78aebd47876d330a30f6a8c6d61dd1ab5589329de714d19d61370f8149748c72f132f0fc99"
	"f34d766c6938597040d8f9e2bb522ff99c63a344d6a2ae8aa8e51b7b90a4a806105fcbca31506c44"
	"6151adfeceb51b91abfe43960977c87471cf9ad4074d30e10d6a7f03c63bd5d4317f68ff325ba3bd"
	"80bf4dc8b52a0ba031758022eb025cdd770b44d6d6cf0670f4e990b22347a7db848265e3e5eb72df"
	"e8299ad7481a408322cac55786e52f633b2fb6b614eaed18d703dd84045a274ae8bfa73379661388"
	"d6991fe39b0d93debb41700b41f90a15c4d526250235ddcd6776fc77bc97e7a417ebcb31600d01e5"
	"7f32162a8560cacc7e27a096d37a1a86952ec71bd89a3e9a30a2a26162984d7740f81193e8238e61"
	"f6b5b984d4d3dfa033c1bb7e4f0037febf406d91c0dccf32acf423cfa1e7071010d3f270121b493c"
	"e85054ef58bada42310138fe081adb04e2bd901f2f13458b3d6758158197107c14ebb193230cd115"
	"7380aa79cae1374a7c1e5bbcb80ee23e06ebfde206bfb0fcbc0edc4ebec309661bdd908d532eb0c6"
	"adc38b7ca7331dce8dfce39ab71e7c32d318d136b6100671a1ae6a6600e3899f31f0eed19e3417d1"
	"34b90c9058f8632c798d4490da4987307cba922d61c39805d072b589bd52fdf1e86215c2d54e6670"
	"e07383a27bbffb5addf47d66aa85a0c6f9f32e59d85a44dd5d3b22dc2be80919b490437ae4f36a0a"
	"e55edf1d0b5cb4e9a3ecabee93dfc6e38d209d0fa6536d27a5d6fbb17641cde27525d61093f1b280"
	"72d111b2b4ae5f89d5974ee12e5cf7d5da4d6a31123041f33e61407e76cffcdcfd7e19ba58cf4b53"
	"6f4c4938ae79324dc402894b44faf8afbab35282ab659d13c93f70412e85cb199a37ddec60054547"
	"3cfb5a05e08d0b209973b2172b4d21fb69745a262ccde96ba18b2faa745b6fe189cf772a9f84cbfc";

const char qf_rfc_a2_crypto_hex[] =
	"060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e86804fe3a47f06a2b69"
	"484c00000413011302010000c000000010000e00000b6578616d706c652e636f6dff01000100000a"
	"00080006001d0017001800100007000504616c706e000500050100000000003300260024001d0020"
	"9370b2c9caa47fbabaf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400"
	"0d0010000e0403050306030203080408050806002d00020101001c00024001003900320408ffffff"
	"ffffffffff05048000ffff07048000ffff0801100104800075300901100f088394c8f03e51570806"
	"048000ffff";

/* A real Initial kept as a fixed vector: a client's first, 1250 bytes, SNI ledgerbolt.com. */
const char qf_real_initial_hex[] =
	"ce0000000108db9a00caaa3f72d0000044d091a8a63cff774c41367d482c67db8740cb9762d1131b"
	"28bf9efb734f98658d29c9962b7b8c72cdccea67d5d8e934b1b7cd76b08a1caae05b76084be4754e"
	"c99d3ee090e03d457128aa78089289de333ce86fa23c3261cac46a18fef521d5b1c38c018f161910"
	"809c72c81cd16bb791a847c25f7e352c4c5604837093ecf93d51abb567c7e3aea3cbd9f35abb0f26"
	"ce897c82bde875bebec37f8b7b9fa8f1d9cd853196430ed7931579e601aa179596452c7bf1bd6eb4"
	"32f25174d990cf443fbc23dcd58f09ca9e0780dd0c0add47910c1a98c3180c1e6e2cc3fbe68e7a58"
	"abc4561bf1d2c4ea28a6ff79d77d613b7fe6d0b8ae2e300f4b47b396a073bdcdf2b8ef9559ff2ad9"
	"a16ccc4859b218a89f1c8a750ee8496cd908ae1e2c7967f8e589d73dd8136540bb1dffa3a1f2d900"
	"175f62de3edce2e051c42d07f4927bcf5960e3babcd7301e1f977c66e6210cb96e497f8335feb90f"
	"29c7603913d95df655cacaa7759a0abbc62dc6b74f2c0e0fbf52a279d3ccf76c34cea662ef519429"
	"fc1eb3e03a4e341c589faf8469d537bdeda871783041c5a6f0d062bbae9cee990ee29a6fef8ecf53"
	"ae849c16b3fc56a2c17801333398976629c56b7863d6b74025e5a0958b706388482db6545e612284"
	"f15a3a0fa0344e184c77cd21ae0348268e6530f16b959439dd7b29b552f4162fb14d7a3558a78032"
	"34bf1ff8512329c6fc46d2cd42b44dd76559fee97bd7e00d1f303f30f0ddbe37a2fdb0ec230ecbb1"
	"ed73a5c24f2db0294a936e44392a824643a4b13259f30d3915994916983af1d143cebef16fc89eef"
	"434e1dc43282888fc9a906bcefc2f7ed3a76f2e997e76ed075c71b8c5869a73c595197eb37b05c06"
	"213aa57c66467d74d72fcef9aaa4f59f1b626cdcc0ccfd148a36d09c3462948639feab8e63a188f0"
	"8f6a0000569128bad1bdaf022f32cbab025801dd16635327283403976df866ac5cb2d8ccd8ba81d3"
	"f5d49d5f18e8c26edc4e6221defc4ab237d6f8f398cf8fe64f8f4f6f2c7d1487f8afa9da3df6e0cc"
	"6cd0f2d4852c67b8b3b6e4d27637e4508f32d079735efabb9d3d1bb0429d1d99b79bb2a12ba2188a"
	"e28b34f848784de23549390461abe6450792d73e11b8ce8e85524045d65bfc03d6e663c3550a4bb5"
	"75f05e50bbb2c21c6f7d3ed6773523dae743156c5f077bb87fdf4538da11538caedda7120c295b0c"
	"94c32f83b6655e8257925c1f6dd68c90b8146e9630b114ff4e3a238a73dcd198ed5c2b4c7d7c1581"
	"0ed37d266086c8d20b318b4fd632721235bf9f056ba4d2dbdfd263906c395c3d1d41410576696a8d"
	"ccf3ccb94d4c7bfca3dbd229eef3099263941ee3602322427d985d50ca8ec3408918530dd2567c6b"
	"5007b8043c79de579ec8a3a558e2246d6816f42cd51cb9d3b248ca236cedb01425ee07e08f9a2db7"
	"c5f65e6e4720da3a1ba6420a9dceb15f0de3b714a9c045899ae07d1e287bc742522753635adfb994"
	"80107815062d9aa4ddd68ccafd87e997e349e8d135b62f35db766696914885bf9517ffde9855d1e0"
	"273ff757d773609a85c4c073c77704fed28464d529d48dcdbc543493db359a2a0bfeeff3b5238990"
	"6a13bae688b5e0194945be218c3d73ee61c542014d25aec4567e3d4dc0be828dc06eece3d6161321"
	"6253230edab3aa7108f6f852f84d05cda02a5c184a0379e5519d8b6dd57bf4f20602d349af22727d"
	"5225ded210bb20ad2c72";

/* A fixed vector of two real Initials: one hello in two datagrams (CRYPTO 0..1150, 1150..). */
const char qf_pair1_hex[] =
	"cf00000001083b4190854ddd9687000044d0470bdfe80bcaedeb7619cbf34b702e9a5b778d7c90b0"
	"4136c914f01e28ebe741dc1a4f850283789a24abed1c46b90f037ca76e4620a44eb81a8dd830db9f"
	"c3a4ec0b6750a1559254e87e9c6f27fff10522a1fa354ac826be75300ad83043de698835bf6db020"
	"5256b9db768b5e5840491dfbc8ad810205ea1fb4c13e14c79f3171c12c36fce5df9d9dce54242b01"
	"723640f1c57bcd373f5e9c84a4e00d353abe54a277f758c5d0ce9846e9519f431028b2874173da4c"
	"95133616471655b753cebca1c97d8341aa745b80a58889dae9b335d6183fde4137261ab1a090b151"
	"0a75ab185b6dd49bde915212e0bb583e2d81eb53814cd86fb0f4a505970710bedbf5bac5f95603ac"
	"c4cafdb8a11a49c8c0c6177f283fbc74c5714d0b715e43e01f09fabf993878b3edf7a95add487032"
	"a2d771a4d258aaaecd23f66391ac5149ef345291723baaa6a32bab5a097fc18488c5e533fcb24c6e"
	"578b0b508b38ea2947bda7a7c5d8af7fa742bb6f5e149c977b818cb6b7f2c17c9385622cb57e4c7d"
	"95127f1bee1de7e76da926e52e77c1ed03c70bf0b0bf194a4484326c3e36f0bbfe9ca8884657f292"
	"b1450e4c7d8567b5acd6350ea07b19bd0df34d8cc81132ffafc10fe5e7d412425c2644672378b545"
	"f1c0414b3ed46f27c4ae2a6f795b5e7f1828d8398da2c62bf45269adc6951b33ce41dddc3d5388a9"
	"25c5bf9dee44d38de7f7313fa932f58587270d457fa800455a839d2b57567c1cf48dd96dac82ff53"
	"bacd6aee21ed5c6b18d40d02bf5799447a9c2f2a77be19640e4aeec5a8a3fec57412d56ee9aeecb4"
	"d91b59abde0da2a31c969b3bf64598619165d1881fc7628d74a95efb9c65215bba2cae144c817ebc"
	"a27abafaf7de348c7deb5192816a1418d7e85fbe09cbc6bbb58fb6ae5cb4b169e629821f4de7da76"
	"e3625039cb9b6277fe75a2f063eae9c8604bd5d0dfbf3ddbe5a50c5caa7682650767cee738b39d09"
	"72518f79bf29f87a79dddd58496717acd1a952339de0069faa8deb2e5ab3efd6228aa9b3917f4f4c"
	"b195d408912954e9411a1ac10a80f8ca5dff70707af27e466ef6c21e158484879542135573f71c3c"
	"3ad621bc1ce007619153bbc5cbdff8b0639bf0a534ae9944c19568d1d2c0548de783965b85dca614"
	"5f79f2d3275f00bfd0aba2c7da70becc4e5568e9d3643cddb9c13f795ad3c13607436e66ce3cb3e0"
	"2e0e06d0a0aee6500d0786d0cd0e55f435e4aba5dbc6b2400fb140d47210d4bd723307d51007e672"
	"e25e30e596b920c0c18d7faccf08c450e64e61bd472c8d8bea2a52fad8d5429178e422ece476bf30"
	"ac6d72a88319c6d77d95dcecf6842cb39e44e958b439393d8acdc4369472d40322f35c648138a9a1"
	"981c17753f337d1d3ffa900af9dca053b3a589d6284f8e3deff99ac578b25fb520bc4afece9a58c1"
	"2eaf16605944369cb6264d746bec58048acb4f91a44ba0aacf14f5a90d53c6246ba28911d7f3eca9"
	"51dcfbf1cec5a1fcac169d011b470bce06069715562809389d4c9bccca4eca63dda20983f920ad6f"
	"3cc6456e534e9e2126c0d5e9ee3d405e6cee2769acbdc94ef04979344e4e91bcd2a4c7df5654bfd9"
	"86f226309566721032787c67df999c4a138808c91e1bfbaa3c5aa159032b67f7683c777c198c66a9"
	"12aea05e095784d0fa0dfbc325d528d3f4cec6bfc9d3d2b58657349be2c098e714fee53b3ae1ef28"
	"e46aab186055eebf241c";

const char qf_pair2_hex[] =
	"c900000001083b4190854ddd9687000044d0da0c1ef48428762c577b297295738873896918535fbc"
	"3844ffd5a5611892c48c033c4fbdc7d9b80569b67c78362de36002408ecf213bf90df3694f8d9355"
	"718d1d9e921a630bce555512a4b7bbec91cbb9c884e69475dce4e42ada4c94fc554b9fcc3118b1f2"
	"7cbcdf96969917fc907b170099dfb6ec7094c337470ca6b70c8b990c8d418ce7018635c84d429e1a"
	"abb20391ee1b94507e447dc606b6a886f7c17e2924ed1a5ac48da83f5ee895765cdd183610aeb892"
	"1433c7b60a6c73ba2ab665026a4cd4fc4995ec018b7b5896e560ef21e4342facdcf189f322726326"
	"4467d99c05d00ea1d0d1980c5a3fe37ddce849c8f1dae13ba3af5ea94db68ff87578e9e731fe1e13"
	"4b9d70b9917a772b974f37c731f36eafebae4a9d8ddb084cc69b7b7aa409f50e3f7410cb8bb6fddf"
	"e4e4e27b70476f4c3eedaf63863db6172351b35d76ac591eebd7f7baad2b98c91db1dc3eae04a6ba"
	"aa238c8b491134bffa305fac1c722def04ad37f32bad023e12c45930c052926343c3ecd3ce38fb9a"
	"1bc309d1e05837908e4ffd95d34c5cd0c29c2deefa75b8aba9c662835be6d6981174b5956b7d98b7"
	"e6045cfdb0982165e4cbe1921802ed7b6a5593a56b00791dfdafb908c791134ce1b6577239542d31"
	"724408f7cf74cdfe27d62886b71c2761e5c1d18a2aa1d72bf27c3a2a6a7aa8bc992f54f96127442d"
	"c0a005293cad909a3ce675ad5ea9917732ffd6a40ff3309e50f60cb5d132c95dfb7f321a35142cf3"
	"14177a35247b6affbb019b5df18065690137109994530056ca11b998dd78354df0edb7c2b5ad2202"
	"1d0508c358adcd864fa52f704f94519e855d0311e928d7143b725d1dff75b8f0d6fe64975fab5a87"
	"6655e9409fe06b7dfcbd858ff218786470ae6481b8308676047a97c2455f8ad44794d3ec495f6aef"
	"9187a697d758fb2f719bc97c4c50c83ed917e5643e1df15b922bdaa9bf4061b8e713cc6dca823195"
	"0c0a78e4cc6c83dad77ee976706ea7079b3bcb0d854bec4dac2b561914ba625a11586e43a0d4da5d"
	"62c900528fc5ac3a9a46cebbc8adbc9d97ef862f5943da0ba44489075619615ed3cc9c4a39018134"
	"6c39a01413ef21af4de4a6ae3c441e9319c3a47c16ce233f8ebb320a3f6861a72ae5b3fecb0aac1c"
	"afb2376f3cca9281ac4ac0961b1bcc837414c53902ced486eb02b456146d07c30af6ec50142d4da9"
	"6413b981d3d46217718268a77ed866e6ef66248a4471dac06508cc87ea9566713ff96a6883143ebd"
	"ad62fa4ce6b6a0ab92af4c22e4531d9ce93123b25489cc9aeeac50b40f1551745a5e669861538d21"
	"a81d5aadc275f94836a95eea5a4da936af689f6c8d0ed66c0471cb38ebf28df57f75bd68f12ad43b"
	"ccde24f2fa6d5b1794b63d9ae9c893cd27d0c1a757eb398fd084ba989475fffe160c0cb507587d2d"
	"b9cb791d5b503d600a67ae6115b7ee7806d6a9dfbe3ab844672e4748f013b3d6e178df978d565618"
	"f78cc94eb8e4c372793f4178b32f00a466a5145fef5f2dd36b1c17daf104fa4286cf0a6cefc8a367"
	"810b2ae52e9a68b2a70cd9e1910f36a3e734de945bf17b84ee5fb9237fa5c6a4b75cae8b257cca62"
	"2a45091026e4e7673d6692b07451b439ba5ed8dc2eb91b8c5bb45cdba2c9dec777bae040fab27480"
	"ee3dd5787eb7576efdcbe6ead48a4ab8900723c05c0c39177168e83b9bae99841434066e69489e01"
	"c894d569815f16e03593";

size_t
qf_unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (; hex[0] != '\0' && hex[1] != '\0'; hex += 2) {
		char h[3] = { hex[0], hex[1], '\0' };

		assert_true(n < cap);
		out[n++] = (uint8_t)strtoul(h, NULL, 16);
	}
	return n;
}

void
qf_flow_init(struct qf_flow *f)
{
	dp_quic_hello_init(&f->h, f->buf, sizeof(f->buf));
}

/* Feed an exact-size heap copy, so valgrind and ASan see a read past the datagram. */
enum dp_quic_status
qf_feed(struct qf_flow *f, const uint8_t *d, size_t n)
{
	uint8_t *copy = malloc(n > 0 ? n : 1);
	enum dp_quic_status st;

	assert_non_null(copy);
	memcpy(copy, d, n);
	st = dp_quic_hello_feed(qf_ctx, &f->h, copy, n, &f->out);
	free(copy);
	return st;
}

void
qf_assert_sni(const struct qf_flow *f, const char *want)
{
	tf_assert_name(f->out.sni, want);
	/* out aliases the flow's buffer, not the datagram */
	assert_true(f->out.sni.p > f->buf && f->out.sni.p + f->out.sni.len <= f->buf +
	    sizeof(f->buf));
}

/* A QUIC varint in its shortest form (RFC 9000 s16). */
void
qf_put_varint(struct tf_msg *m, uint64_t v)
{
	if (v < 64) {
		tf_u8(m, (unsigned int)v);
	} else if (v < 16384) {
		tf_u16(m, (unsigned int)(0x4000 | v));
	} else {
		assert_true(v < (UINT64_C(1) << 30));
		tf_u16(m, (unsigned int)(0x8000 | v >> 16));
		tf_u16(m, (unsigned int)(v & 0xffff));
	}
}

void
qf_crypto_frame(struct tf_msg *m, size_t off, const uint8_t *data, size_t n)
{
	tf_u8(m, 0x06);
	qf_put_varint(m, off);
	qf_put_varint(m, n);
	tf_raw(m, data, n);
}


/*
 * Protect one Initial whose payload is frames (n bytes) and pad zero bytes (PADDING) into
 * out, as a client does (RFC 9001 s5.3-5.4). Returns its length.
 */
size_t
qf_seal_pad(const struct qf_seal *s, const uint8_t *frames, size_t n, size_t pad, uint8_t *out)
{
	uint32_t version = s->version ? s->version : QUIC_V1;
	const char *dcid_hex = s->dcid ? s->dcid : QF_RFC_DCID;
	size_t pn_len = s->pn_len ? s->pn_len : 2, pl = n + pad, h = 0, pn_off, dl, kl, sl;
	uint8_t dcid[QUIC_CID_MAX], kdcid[QUIC_CID_MAX], scid[QUIC_CID_MAX], nonce[12];
	uint8_t mask[32], *plain;
	struct dp_quic_keys k;
	EVP_CIPHER_CTX *c;
	int len;

	dl = qf_unhex(dcid_hex, dcid, sizeof(dcid));
	kl = qf_unhex(s->key_dcid ? s->key_dcid : dcid_hex, kdcid, sizeof(kdcid));
	sl = qf_unhex(s->scid ? s->scid : "", scid, sizeof(scid));
	assert_int_equal(dp_quic_keys_derive(qf_ctx, s->key_version ? s->key_version : version,
	    kdcid, kl, &k, NULL), 0);
	plain = malloc(pl > 0 ? pl : 1);
	assert_non_null(plain);
	memcpy(plain, frames, n);
	memset(plain + n, 0, pad);

	out[h++] = (uint8_t)(0xc0 | (version == QUIC_V2 ? 0x10 : 0) | s->reserved << 2 |
	    (pn_len - 1));
	for (int i = 3; i >= 0; i--)
		out[h++] = (uint8_t)(version >> (8 * i));
	out[h++] = (uint8_t)dl;
	memcpy(out + h, dcid, dl);
	h += dl;
	out[h++] = (uint8_t)sl;
	memcpy(out + h, scid, sl);
	h += sl;
	out[h++] = 0;					/* no token */
	assert_true(pn_len + pl + 16 < 16384);
	out[h++] = (uint8_t)(0x40 | (pn_len + pl + 16) >> 8);
	out[h++] = (uint8_t)(pn_len + pl + 16);
	pn_off = h;
	for (size_t i = 0; i < pn_len; i++)
		out[h++] = (uint8_t)(s->pn >> (8 * (pn_len - 1 - i)));

	memcpy(nonce, k.iv, sizeof(nonce));
	for (size_t i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(s->pn >> (8 * i));
	assert_non_null(c = EVP_CIPHER_CTX_new());
	assert_true(EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, k.key, nonce));
	assert_true(EVP_EncryptUpdate(c, NULL, &len, out, (int)h));
	assert_true(EVP_EncryptUpdate(c, out + h, &len, plain, (int)pl) || pl == 0);
	assert_true(EVP_EncryptFinal_ex(c, out + h + pl, &len));
	assert_true(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, out + h + pl));
	assert_true(EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, k.hp, NULL));
	assert_true(EVP_EncryptUpdate(c, mask, &len, out + pn_off + 4, 16) && len == 16);
	EVP_CIPHER_CTX_free(c);
	free(plain);

	out[0] ^= mask[0] & 0x0f;
	for (size_t i = 0; i < pn_len; i++)
		out[pn_off + i] ^= mask[1 + i];
	return h + pl + 16;
}

/* One Initial filling a datagram of QF_DGRAM bytes (more if the frames need it). */
size_t
qf_seal(const struct qf_seal *s, const struct tf_msg *frames, uint8_t *out)
{
	size_t bare = qf_seal_pad(s, frames->b, frames->n, 0, out);

	return bare >= QF_DGRAM ? bare : qf_seal_pad(s, frames->b, frames->n, QF_DGRAM - bare, out);
}

/* A TLS 1.3 ClientHello (no record header) for host, NULL for none, pq key-share bytes. */
void
qf_hello_make(struct tf_hello *th, const char *host, size_t pq)
{
	static const char *const h3[] = { "h3", NULL };

	tf_hello_begin(th);
	if (host != NULL)
		tf_ext_sni(&th->m, host);
	tf_ext_common(&th->m);
	tf_ext_alpn(&th->m, h3);
	tf_ext_key_share(&th->m, pq);
	tf_hello_end(th);
}

/* Seal and feed one Initial with one CRYPTO frame: data (n bytes) at stream offset off. */
enum dp_quic_status
qf_feed_crypto(struct qf_flow *f, const struct qf_seal *s, size_t off, const uint8_t *data,
    size_t n)
{
	static struct tf_msg fr;
	static uint8_t pkt[4096];
	size_t len;

	fr.n = 0;
	qf_crypto_frame(&fr, off, data, n);
	len = qf_seal(s, &fr, pkt);
	return qf_feed(f, pkt, len);
}

int
qf_setup(void **state)
{
	(void)state;
	return (qf_ctx = dp_quic_ctx_new()) == NULL ? -1 : 0;
}

int
qf_teardown(void **state)
{
	(void)state;
	dp_quic_ctx_free(qf_ctx);
	return 0;
}

/* The UDP payload of a client datagram to port 443 in an Ethernet frame, or NULL. */
const uint8_t *
qf_udp443(const uint8_t *p, size_t n, uint8_t key[34], size_t *len)
{
	size_t l3 = 14, l4;
	uint16_t type;

	if (n < 14)
		return NULL;
	type = (uint16_t)(p[12] << 8 | p[13]);
	while ((type == 0x8100 || type == 0x88a8) && n >= l3 + 4) {
		type = (uint16_t)(p[l3 + 2] << 8 | p[l3 + 3]);
		l3 += 4;
	}
	memset(key, 0, 34);
	if (type == 0x0800 && n >= l3 + 20 && p[l3 + 9] == 17) {
		l4 = l3 + (size_t)(p[l3] & 0x0f) * 4;
		memcpy(key, p + l3 + 12, 4);
		memcpy(key + 18, p + l3 + 16, 4);
	} else if (type == 0x86dd && n >= l3 + 40 && p[l3 + 6] == 17) {
		l4 = l3 + 40;
		memcpy(key, p + l3 + 8, 16);
		memcpy(key + 18, p + l3 + 24, 16);
	} else {
		return NULL;
	}
	if (n < l4 + 8 || p[l4 + 2] != 0x01 || p[l4 + 3] != 0xbb)
		return NULL;
	memcpy(key + 16, p + l4, 2);
	*len = (size_t)(p[l4 + 4] << 8 | p[l4 + 5]) - 8;
	if (*len > n - l4 - 8)
		return NULL;
	return p + l4 + 8;
}

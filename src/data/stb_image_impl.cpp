// The one translation unit that compiles stb_image (Debian's libstb-dev ships it header-only).
// PNG and JPEG only: the formats image folders accept.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_FAILURE_USERMSG
#include <stb/stb_image.h>

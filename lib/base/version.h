// routelab's version, the one place it is written: CMakeLists.txt reads these
// three numbers into project(VERSION), so `routelab --version`, the JSON
// sidecars and the installed package (routelabConfigVersion.cmake) all report
// it, and a program built on the library reads it here. The major number
// changes when a header of the public API (docs/api.md) changes incompatibly;
// while it is 0, the minor number does.
#pragma once

#define ROUTELAB_VERSION_MAJOR 0
#define ROUTELAB_VERSION_MINOR 2
#define ROUTELAB_VERSION_PATCH 2

#define ROUTELAB_STRINGIFY_(x) #x
#define ROUTELAB_STRINGIFY(x) ROUTELAB_STRINGIFY_(x)
// "MAJOR.MINOR.PATCH"
#define ROUTELAB_VERSION_STRING                                                      \
  ROUTELAB_STRINGIFY(ROUTELAB_VERSION_MAJOR) "." ROUTELAB_STRINGIFY(ROUTELAB_VERSION_MINOR) "." \
      ROUTELAB_STRINGIFY(ROUTELAB_VERSION_PATCH)

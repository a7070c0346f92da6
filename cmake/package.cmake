# The Debian package (CPack): `cmake --build BUILD --target package` makes
# tether_<version>_amd64.deb in BUILD.  `make deb` makes it from a package
# build (scripts/dist.sh: Release, no tests, no build-machine paths).
#
# Depends: computed.  dpkg-shlibdeps reads the libraries the binary and
# libtether.so link (jansson, libb2, zstd, zlib, sqlite3, libc); the
# libraries tether opens on first use (src/util/dynlib.c) are not linked,
# so their packages are looked up here from the sonames the build found:
# OpenSSL's libcrypto is Depends (every file fingerprint hashes with it),
# libcurl, libpq and libmariadb Recommends (remote stores, PostgreSQL and
# MySQL-protocol catalogs and databases; each says what to install when
# missing).  libduckdb has no Debian package: DuckDB-file DuckLake catalogs
# and `tether query` need libduckdb.so on the library path, and say so
# without it.
set(TETHER_PACKAGE_MAINTAINER "tether maintainers <maintainers@tether.invalid>" CACHE STRING
  "the .deb's Maintainer field")

# The Debian package that holds SONAME, found beside LIB (the library the
# build found); empty when dpkg does not know it (not a Debian system).
function(tether_deb_package_of out soname lib)
  set(pkg "")
  find_program(TETHER_DPKG_QUERY dpkg-query)
  if(TETHER_DPKG_QUERY)
    set(candidates)
    if(lib)
      get_filename_component(dir "${lib}" DIRECTORY)
      get_filename_component(real "${dir}/${soname}" REALPATH)
      list(APPEND candidates "${dir}/${soname}" "${real}")
    endif()
    list(APPEND candidates "*/${soname}")
    foreach(c ${candidates})
      execute_process(COMMAND ${TETHER_DPKG_QUERY} -S "${c}" OUTPUT_VARIABLE found ERROR_QUIET
        RESULT_VARIABLE rc)
      if(rc EQUAL 0 AND found MATCHES "^([^:, \n]+)")
        set(pkg "${CMAKE_MATCH_1}")
        break()
      endif()
    endforeach()
  endif()
  set(${out} "${pkg}" PARENT_SCOPE)
endfunction()

function(tether_first_lib out)
  set(first "")
  foreach(l ${ARGN})
    if(l MATCHES "\\.so")
      set(first "${l}")
      break()
    endif()
  endforeach()
  set(${out} "${first}" PARENT_SCOPE)
endfunction()

tether_deb_package_of(TETHER_DEB_CRYPTO "${TT_SONAME_CRYPTO}" "${OPENSSL_CRYPTO_LIBRARY}")
set(TETHER_DEB_DEPENDS git)
if(TETHER_DEB_CRYPTO)
  list(APPEND TETHER_DEB_DEPENDS ${TETHER_DEB_CRYPTO})
endif()
set(TETHER_DEB_RECOMMENDS)
foreach(pair "CURL;${CURL_LINK_LIBRARIES}" "PQ;${LIBPQ_LINK_LIBRARIES}" "MARIADB;${MARIADB_LINK_LIBRARIES}")
  list(POP_FRONT pair name)
  tether_first_lib(lib ${pair})
  tether_deb_package_of(p "${TT_SONAME_${name}}" "${lib}")
  if(p)
    list(APPEND TETHER_DEB_RECOMMENDS ${p})
  endif()
endforeach()
list(JOIN TETHER_DEB_DEPENDS ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
list(JOIN TETHER_DEB_RECOMMENDS ", " CPACK_DEBIAN_PACKAGE_RECOMMENDS)
message(STATUS ".deb: Depends ${CPACK_DEBIAN_PACKAGE_DEPENDS} + the linked libraries (dpkg-shlibdeps); "
  "Recommends ${CPACK_DEBIAN_PACKAGE_RECOMMENDS}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tether)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${TETHER_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "version control for datasets that live in other systems")
# (CPack writes the summary as the first line and indents each of these)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "tether records the exact state of each object of a dataset (a directory,
an object-store prefix, a git repository, an Icechunk repository, a Lance
dataset, a Delta or Iceberg table, a DuckLake catalog, a Dolt or Neon
database) in a git repository of small manifests, pins it with a native
ref, forks writable branches off pins, promotes them back and collects
what nothing references.

This package holds the tether command, its man pages and shell
completions, and libtether (shared and static library, headers and
pkg-config file). DuckDB-file DuckLake catalogs and tether query need
libduckdb.so (DuckDB's C library, not packaged by Debian) on the library
path.")
set(CPACK_DEBIAN_PACKAGE_SECTION vcs)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
include(CPack)

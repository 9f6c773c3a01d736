# Debian packages (issue 23): `cmake --build build --target package` runs CPack's DEB generator
# and writes three packages into the build directory:
#
#   tlbfleet-controller  /usr/bin/tlbfleet-controller, the dashboard (/usr/share/tlbfleet/dashboard,
#                        where the installed controller looks for it), its systemd unit,
#                        /etc/tlbfleet/controller.yaml (conffile), the system user `tlbfleet`
#                        and /var/lib/tlbfleet (postinst)
#   tlbfleet-agent       /usr/bin/tlbfleet-agent and tlbfleet-bench, its unit,
#                        /etc/tlbfleet/agent.yaml (conffile), /var/lib/tlbfleet-agent (postinst)
#   tlbfleet-cli         /usr/bin/tlbfleet and the documentation (/usr/share/doc/tlbfleet-cli)
#
# All three match `apt-get install ./tlbfleet-*.deb`. Runtime dependencies come from
# dpkg-shlibdeps (dpkg-dev) on the stripped binaries, so apt pulls Debian's gRPC, protobuf,
# Abseil, ... Nothing is enabled or started on install (deploy/debian/README.md says why).
# The maintainer scripts, conffiles, changelog and copyright are in deploy/debian/; the units
# are deploy/systemd's with the packaged paths. tests/package/package_test.sh builds,
# inspects, lints and installs the packages into a clean Debian 12 root.
#
# Every install() rule here is EXCLUDE_FROM_ALL in a component of its own: a plain
# `cmake --install build --prefix P` (tests/install) installs what it always did and writes
# nothing under /etc or /lib; CPack installs each component on its own.

set(TLBFLEET_PACKAGE_MAINTAINER "tlbfleet developers <tlbfleet@lists.tlbfleet.dev>"
    CACHE STRING "Maintainer field of the Debian packages (Name <address>)")
set(TLBFLEET_DEB_RELEASE 1)
set(TLBFLEET_DEB_VERSION ${PROJECT_VERSION}-${TLBFLEET_DEB_RELEASE})

set(tlbfleet_deb_src ${CMAKE_SOURCE_DIR}/deploy/debian)
set(tlbfleet_deb_gen ${CMAKE_BINARY_DIR}/packaging)
file(MAKE_DIRECTORY ${tlbfleet_deb_gen})

# Debian 12 keeps system units in /lib/systemd/system (the /usr/lib move came after bookworm).
set(tlbfleet_deb_unitdir /lib/systemd/system)

# changelog.Debian.gz, the same for the three packages of source package tlbfleet: gzip -n,
# so the file (and the package) does not change with the time it was made.
configure_file(${tlbfleet_deb_src}/changelog.in ${tlbfleet_deb_gen}/changelog.Debian @ONLY)
execute_process(COMMAND gzip -9 -n -c ${tlbfleet_deb_gen}/changelog.Debian
                OUTPUT_FILE ${tlbfleet_deb_gen}/changelog.Debian.gz
                RESULT_VARIABLE tlbfleet_gzip_status)
if(NOT tlbfleet_gzip_status EQUAL 0)
  message(FATAL_ERROR "packaging: gzip of the Debian changelog failed")
endif()

# tlbfleet_deb_component(COMPONENT PACKAGE UNIT CONFIG DOCS...)
# The unit (from deploy/systemd, with /usr paths and its Documentation= in this package's doc
# directory), the conffile, the maintainer scripts, copyright, changelog and DOCS.
function(tlbfleet_deb_component component package unit config)
  set(out ${tlbfleet_deb_gen}/${component})
  file(MAKE_DIRECTORY ${out})
  set(unit_src ${CMAKE_SOURCE_DIR}/deploy/systemd/${unit})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${unit_src})
  file(READ ${unit_src} unit_text)
  string(REPLACE "file:///usr/local/share/doc/tlbfleet/" "file:///usr/share/doc/${package}/"
                 unit_text "${unit_text}")
  string(REPLACE "/usr/local/bin/" "/usr/bin/" unit_text "${unit_text}")
  string(PREPEND unit_text "# Installed by the ${package} package (from deploy/systemd/${unit}).\n")
  tlbfleet_write_if_changed(${out}/${unit} "${unit_text}")

  # CPack wants the control files under their Debian names; CONTROL_STRICT_PERMISSION gives
  # the scripts 0755 and the rest 0644.
  set(extra)
  foreach(script postinst prerm postrm)
    if(EXISTS ${tlbfleet_deb_src}/${component}.${script})
      configure_file(${tlbfleet_deb_src}/${component}.${script} ${out}/${script} COPYONLY)
      list(APPEND extra ${out}/${script})
    endif()
  endforeach()
  tlbfleet_write_if_changed(${out}/conffiles "/etc/tlbfleet/${config}\n")
  list(APPEND extra ${out}/conffiles)
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA "${extra}" PARENT_SCOPE)

  install(FILES ${out}/${unit} DESTINATION ${tlbfleet_deb_unitdir}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
  install(FILES ${tlbfleet_deb_src}/${config} DESTINATION /etc/tlbfleet
          COMPONENT ${component} EXCLUDE_FROM_ALL)
  install(FILES ${tlbfleet_deb_src}/copyright ${tlbfleet_deb_gen}/changelog.Debian.gz
                ${ARGN}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
endfunction()

tlbfleet_deb_component(controller tlbfleet-controller tlbfleet-controller.service controller.yaml
                       ${CMAKE_SOURCE_DIR}/docs/operations.md ${CMAKE_SOURCE_DIR}/docs/api.md)
tlbfleet_deb_component(agent tlbfleet-agent tlbfleet-agent.service agent.yaml
                       ${CMAKE_SOURCE_DIR}/docs/agent.md)

install(TARGETS tlbfleet-controller RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT controller EXCLUDE_FROM_ALL)
install(TARGETS tlbfleet-agent tlbfleet-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT agent EXCLUDE_FROM_ALL)
install(TARGETS tlbfleet RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT cli EXCLUDE_FROM_ALL)
install(FILES ${tlbfleet_deb_src}/copyright ${tlbfleet_deb_gen}/changelog.Debian.gz
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/tlbfleet-cli COMPONENT cli EXCLUDE_FROM_ALL)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/tlbfleet-cli
        COMPONENT cli EXCLUDE_FROM_ALL FILES_MATCHING PATTERN "*.md" PATTERN "*.png")

# The dashboard (cmake/dashboard.cmake, included before this file) where an installed controller
# finds it with no flag: <bindir>/../share/tlbfleet/dashboard.
if(TARGET dashboard)
  install(DIRECTORY ${TLBFLEET_DASHBOARD_DIST}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tlbfleet/dashboard
          COMPONENT controller EXCLUDE_FROM_ALL)
else()
  message(STATUS "packaging: the dashboard is not built (-DTLBFLEET_DASHBOARD=ON): "
                  "tlbfleet-controller's package would serve no dashboard")
endif()

# --- CPack ----------------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tlbfleet)
set(CPACK_PACKAGE_VENDOR "The tlbfleet authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${TLBFLEET_PACKAGE_MAINTAINER})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL controller agent cli)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${TLBFLEET_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SOURCE tlbfleet)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${TLBFLEET_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

set(CPACK_DEBIAN_CONTROLLER_PACKAGE_NAME tlbfleet-controller)
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME tlbfleet-agent)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME tlbfleet-cli)
# adduser: the postinst makes the system user.
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_SUGGESTS tlbfleet-cli)
set(CPACK_DEBIAN_AGENT_PACKAGE_SUGGESTS tlbfleet-cli)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)

# The first line is the synopsis, the rest the extended description (lines of at most 79
# characters with the space CPack puts before each: lintian).
set(tlbfleet_deb_about
    "tlbfleet runs mmtests-style kernel benchmarks on a fleet of x86 Linux hosts,
flips the kernel's TLB flush ceiling between runs and compares the variants.")
set(CPACK_COMPONENT_CONTROLLER_DESCRIPTION
    "kernel TLB benchmark fleet - controller
${tlbfleet_deb_about}
This package holds the controller: it keeps every sample in SQLite with its
provenance, schedules jobs onto agents, and serves the HTTP/JSON API and the
web dashboard. Its systemd unit is installed but neither enabled nor started.")
set(CPACK_COMPONENT_AGENT_DESCRIPTION
    "kernel TLB benchmark fleet - agent
${tlbfleet_deb_about}
This package holds the agent that runs on each benchmark host, as root: it
dials the controller, runs the native workloads and streams their samples
back; and tlbfleet-bench, which runs any workload on its own. Its systemd unit
is installed but neither enabled nor started.")
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "kernel TLB benchmark fleet - command line client
${tlbfleet_deb_about}
This package holds the tlbfleet command, which submits runs to a controller
and prints their comparisons, series and regressions, and the project's
documentation.")

include(CPack)

# The web dashboard (dashboard/, TypeScript + Vite) and its tests.
#
#   -DTLBFLEET_DASHBOARD=ON   build it with the rest (deploy/test.sh and deploy/quickstart.sh
#                             turn it on); needs node >= 20.19 and npm. OFF: the C++-only build.
#
# Target `dashboard`: `npm ci` (only when package-lock.json changed; from npm's cache when it
# can, deploy/install-deps.sh fills that cache) then `npm run build`: protoc + ts-proto types,
# tsc --strict, eslint, prettier --check, vite build into ${CMAKE_BINARY_DIR}/dashboard/dist,
# which tlbfleet-controller serves at / by default.
# Tests: `dashboard_unit` (Vitest, label unit) and one CTest test per browser scenario file
# (Playwright driving Debian's Chromium against a real controller and agent, label browser).
option(TLBFLEET_DASHBOARD "Build the web dashboard (needs node and npm)" OFF)
if(NOT TLBFLEET_DASHBOARD)
  return()
endif()

find_program(TLBFLEET_NPM npm)
find_program(TLBFLEET_NODE node)
if(NOT TLBFLEET_NPM OR NOT TLBFLEET_NODE)
  message(WARNING "TLBFLEET_DASHBOARD is ON but node/npm were not found: no dashboard")
  return()
endif()
execute_process(COMMAND ${TLBFLEET_NODE} --version OUTPUT_VARIABLE node_version
                OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REGEX REPLACE "^v" "" node_version "${node_version}")
if(node_version VERSION_LESS 20.19)
  message(WARNING "the dashboard needs node >= 20.19 (found ${node_version}): no dashboard")
  return()
endif()

set(TLBFLEET_DASHBOARD_SRC ${CMAKE_SOURCE_DIR}/dashboard)
set(TLBFLEET_DASHBOARD_DIST ${CMAKE_BINARY_DIR}/dashboard/dist)
get_target_property(TLBFLEET_PROTOC protobuf::protoc IMPORTED_LOCATION_RELEASE)
if(NOT TLBFLEET_PROTOC)
  find_program(TLBFLEET_PROTOC protoc REQUIRED)
endif()

set(npm_stamp ${CMAKE_BINARY_DIR}/dashboard/npm-ci.stamp)
add_custom_command(
  OUTPUT ${npm_stamp}
  COMMAND ${TLBFLEET_NPM} ci --prefer-offline --no-audit --no-fund --loglevel=error
  COMMAND ${CMAKE_COMMAND} -E touch ${npm_stamp}
  DEPENDS ${TLBFLEET_DASHBOARD_SRC}/package-lock.json ${TLBFLEET_DASHBOARD_SRC}/package.json
  WORKING_DIRECTORY ${TLBFLEET_DASHBOARD_SRC}
  COMMENT "dashboard: npm ci"
  VERBATIM)

file(GLOB_RECURSE dashboard_inputs CONFIGURE_DEPENDS
  ${TLBFLEET_DASHBOARD_SRC}/src/*.ts ${TLBFLEET_DASHBOARD_SRC}/src/*.tsx
  ${TLBFLEET_DASHBOARD_SRC}/src/*.css
  ${CMAKE_SOURCE_DIR}/proto/*.proto)
list(FILTER dashboard_inputs EXCLUDE REGEX "/src/api/gen/")
add_custom_command(
  OUTPUT ${TLBFLEET_DASHBOARD_DIST}/index.html
  COMMAND ${CMAKE_COMMAND} -E env TLBFLEET_DASHBOARD_OUT=${TLBFLEET_DASHBOARD_DIST}
          PROTOC=${TLBFLEET_PROTOC} ${TLBFLEET_NPM} run --silent build
  DEPENDS ${npm_stamp} ${dashboard_inputs}
          ${TLBFLEET_DASHBOARD_SRC}/index.html ${TLBFLEET_DASHBOARD_SRC}/vite.config.ts
          ${TLBFLEET_DASHBOARD_SRC}/eslint.config.js ${TLBFLEET_DASHBOARD_SRC}/tsconfig.json
          ${TLBFLEET_DASHBOARD_SRC}/scripts/gen-proto.mjs
  WORKING_DIRECTORY ${TLBFLEET_DASHBOARD_SRC}
  COMMENT "dashboard: types, type check, lint, vite build -> ${TLBFLEET_DASHBOARD_DIST}"
  VERBATIM)
add_custom_target(dashboard ALL DEPENDS ${TLBFLEET_DASHBOARD_DIST}/index.html)
install(DIRECTORY ${TLBFLEET_DASHBOARD_DIST}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tlbfleet/dashboard)

# From a clean prefix: cmake --install, then the installed controller serves the installed
# dashboard at / with no flag (tests/install/install_test.sh).
add_test(NAME install_serves_dashboard
         COMMAND ${CMAKE_SOURCE_DIR}/tests/install/install_test.sh ${CMAKE_BINARY_DIR})
set_tests_properties(install_serves_dashboard PROPERTIES LABELS integration TIMEOUT 120)

add_test(NAME dashboard_unit COMMAND ${TLBFLEET_NPM} test --silent
         WORKING_DIRECTORY ${TLBFLEET_DASHBOARD_SRC})
set_tests_properties(dashboard_unit PROPERTIES LABELS unit TIMEOUT 120)

# Browser scenarios: each file starts its own controller and agent on loopback. A controller
# without the HTTP/JSON API (issue 10) makes them exit 77: CTest shows "Skipped", not passed.
find_program(TLBFLEET_CHROMIUM NAMES chromium chromium-browser)
if(NOT TLBFLEET_CHROMIUM)
  message(STATUS "dashboard: no chromium found; browser tests not registered")
  return()
endif()
file(GLOB browser_tests CONFIGURE_DEPENDS ${TLBFLEET_DASHBOARD_SRC}/tests/browser/*.test.mjs)
foreach(test_file ${browser_tests})
  get_filename_component(test_name ${test_file} NAME_WE)
  add_test(NAME browser_${test_name}
           COMMAND ${TLBFLEET_NODE} --test-reporter=spec ${test_file}
           WORKING_DIRECTORY ${TLBFLEET_DASHBOARD_SRC})
  set_tests_properties(browser_${test_name} PROPERTIES
    LABELS browser TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "TLBFLEET_BIN_DIR=${CMAKE_BINARY_DIR}/bin;TLBFLEET_DASHBOARD_DIST=${TLBFLEET_DASHBOARD_DIST};TLBFLEET_BROWSER_ARTIFACTS=${CMAKE_BINARY_DIR}/browser-artifacts;TLBFLEET_CHROMIUM=${TLBFLEET_CHROMIUM};TLBFLEET_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endforeach()

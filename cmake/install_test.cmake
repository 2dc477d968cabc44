# ctest's `install_and_example`: installs this build into a fresh prefix
# under the build directory, checks that the installed package names no
# path of this tree, builds examples/my_kernels against the prefix alone
# and runs its tests, compiles every installed header from the prefix, and
# imports the Python module from the prefix. scripts/check_install.sh does
# the work; it takes a minute or two (mostly compiling the example).
add_test(NAME install_and_example
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/check_install.sh ${CMAKE_BINARY_DIR})
set_tests_properties(install_and_example PROPERTIES TIMEOUT 900
  # The compilers it runs want the machine's two cores.
  RUN_SERIAL FALSE)

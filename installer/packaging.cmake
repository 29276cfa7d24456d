# Where `cmake --install` puts DTLab, and its Debian packages (CPack): installer/dev.sh package
# writes dtlab (the workbench), dtlab-node (the daemon and its service) and dtlab-cli to
# build/packages/, and dtlab-cuda (the CUDA plugin) where the tree builds it. Dependencies come
# from dpkg-shlibdeps, plus what it cannot see.
include(GNUInstallDirs)

install(TARGETS dtlab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gui)
install(TARGETS dtlab-node RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT node)
install(TARGETS dtlab-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)

# The workbench's desktop integration: menu entry, AppStream metadata, icons (hicolor, one
# scalable), and the MIME type of *.dtlab so that the file manager opens projects with it.
set(dtlab_desktop ${PROJECT_SOURCE_DIR}/resources/desktop)
install(FILES ${dtlab_desktop}/org.dtlab.DTLab.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT gui)
install(FILES ${dtlab_desktop}/org.dtlab.DTLab.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo COMPONENT gui)
install(FILES ${dtlab_desktop}/dtlab-project.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages RENAME dtlab.xml COMPONENT gui)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/dtlab.svg
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT gui)
foreach(size 48 128 256)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/dtlab-${size}.png
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps
          RENAME dtlab.png COMPONENT gui)
endforeach()

# The node service: its unit and its settings (a conffile: kept across upgrades).
install(FILES ${PROJECT_SOURCE_DIR}/installer/systemd/dtlab-node.service
        DESTINATION lib/systemd/system COMPONENT node)
install(FILES ${PROJECT_SOURCE_DIR}/installer/systemd/node.conf
        DESTINATION /etc/dtlab COMPONENT node)

# The example specs, for `dtlab-cli run /usr/share/dtlab/examples/...` from any directory (and
# `bench strategies`) and the workbench's start page: in dtlab-node, which both dtlab-cli and
# dtlab depend on. The reference scripts of `dtlab-cli bench ... --reference torch`
# (remote/bench/reference_process.h: resourcesDir) are the command line's.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/specs/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/dtlab/examples COMPONENT node
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/bench/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/dtlab/bench COMPONENT cli
        FILES_MATCHING PATTERN "*.py")

# The documentation (docs/: the user guide, deployment, concepts and the generated reference,
# with its pictures; README.md is its index), in /usr/share/doc/dtlab. Not docs/pictures: the
# specs the docs build records its pictures from.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/dtlab
        COMPONENT gui PATTERN "pictures" EXCLUDE)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_VENDOR "DTLab")
set(CPACK_PACKAGE_CONTACT "DTLab developers <dtlab@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL gui node cli)
if(TARGET dtlab_cuda)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS OFF)

set(CPACK_DEBIAN_GUI_PACKAGE_NAME dtlab)
set(CPACK_COMPONENT_GUI_DESCRIPTION
    "DTLab workbench for distributed deep-learning training experiments\n Configure synthetic datasets and a cluster of dtlab-node daemons, run training\n strategies side by side and compare them live.")
# Qt's platform plugin is loaded at run time, where dpkg-shlibdeps cannot see it; the
# workbench starts its local clusters' daemons from dtlab-node.
# libsecret: QtKeychain loads it at run time to reach the desktop's keyring (node tokens).
set(CPACK_DEBIAN_GUI_PACKAGE_DEPENDS
    "qt6-qpa-plugins, libsecret-1-0, dtlab-node (= ${PROJECT_VERSION})")

set(CPACK_DEBIAN_NODE_PACKAGE_NAME dtlab-node)
set(CPACK_COMPONENT_NODE_DESCRIPTION
    "DTLab node daemon\n Runs DTLab training jobs for the dtlab workbench and dtlab-cli; a hardened\n systemd service (dtlab-node.service) reading /etc/dtlab/node.conf.")
set(CPACK_DEBIAN_NODE_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_NODE_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/installer/debian/dtlab-node/postinst
    ${PROJECT_SOURCE_DIR}/installer/debian/dtlab-node/postrm
    ${PROJECT_SOURCE_DIR}/installer/debian/dtlab-node/conffiles)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME dtlab-cli)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "DTLab command line\n Runs, compares, resumes and benchmarks DTLab experiments on local or remote\n dtlab-node clusters (example specs, from dtlab-node, in /usr/share/dtlab/examples).")
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "dtlab-node (= ${PROJECT_VERSION})")

# The CUDA plugin (core/backend/cuda_plugin.h) where the programs look for it, /usr/lib/dtlab
# beside /usr/bin: a package of its own, so the others run on machines without CUDA. Its
# libraries are NVIDIA's (the CUDA repository's packages, named here: dpkg-shlibdeps cannot name
# packages Debian does not have); the driver's libcuda comes with the GPU's driver.
if(TARGET dtlab_cuda)
  install(TARGETS dtlab_cuda LIBRARY DESTINATION lib/dtlab COMPONENT cuda)
  set(dtlab_cuda_series "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
  set(CPACK_DEBIAN_CUDA_PACKAGE_NAME dtlab-cuda)
  set(CPACK_COMPONENT_CUDA_DESCRIPTION
      "DTLab CUDA backend and NCCL collectives\n The plugin dtlab-node and dtlab-cli load when a spec asks for cuda devices:\n cuBLAS GEMMs in fp32, tf32 or bf16, DTLab's own kernels, NCCL between GPUs.\n Needs NVIDIA's driver and the CUDA ${CUDAToolkit_VERSION_MAJOR} libraries from NVIDIA's repository.")
  set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS
      "dtlab-node (= ${PROJECT_VERSION}), libgloo0, cuda-cudart-${dtlab_cuda_series}, libcublas-${dtlab_cuda_series}, libnccl2")
endif()

include(CPack)

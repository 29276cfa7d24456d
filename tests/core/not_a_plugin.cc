// A shared library that is not a DTLab CUDA plugin (no dtlab_cuda_plugin symbol), for
// test_cuda_plugin: the loader must refuse it by name.
extern "C" __attribute__((visibility("default"))) int dtlab_not_a_plugin() {
  return 42;
}

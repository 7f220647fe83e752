// The shortest way to run a model: texplan::Session (include/texplan/texplan.h).
//
//   run_model MODEL INPUT.pb [DEVICE]      e.g. run_model examples/models/tiny_cnn examples/models/tiny_cnn/test_data_set_0/input_0.pb
#include <texplan/texplan.h>

#include <iostream>

int main(int argc, char** argv) try {
  if (argc < 3) return std::cerr << "usage: run_model MODEL INPUT.pb [DEVICE]\n", 2;
  texplan::Session session(argv[1], {.device = argc > 3 ? argv[3] : "pocl"});
  std::vector<texplan::HostTensor> y = session.run({texplan::load_tensor(argv[2])});
  std::cout << "output " << texplan::to_string(y[0].shape) << ", activations " << session.memory().activation_bytes
            << " B (lower bound " << session.memory().lower_bound_bytes << " B)\n";
} catch (const std::exception& e) {
  std::cerr << "run_model: " << e.what() << "\n";
  return 1;
}

# hearth-cli inspect/synth/quantize and the memory estimator.
hearth_add_test(test_cli SOURCES test_cli.cpp LABELS unit LIBS hearth_engine NEEDS hearth-cli)

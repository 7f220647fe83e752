"""The README's Python session, run as a doctest: what it shows is what the
module prints (the device name elided)."""
import doctest
import os
import unittest

SOURCE = os.environ.get("TEXPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


class Readme(unittest.TestCase):
    def test_python_session_prints_what_the_readme_shows(self):
        cwd = os.getcwd()
        os.chdir(SOURCE)  # the README's paths are relative to the repository
        try:
            r = doctest.testfile(os.path.join(SOURCE, "README.md"), module_relative=False,
                                 optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
        finally:
            os.chdir(cwd)
        self.assertGreater(r.attempted, 5)
        self.assertEqual(r.failed, 0)


if __name__ == "__main__":
    unittest.main()

# Writes OUT: a C++ file defining texplan::kernels::sources(), the text of
# every .cl file in SOURCES keyed by file name.
set(body "// generated from src/kernels/*.cl\n#include <map>\n#include <string>\nnamespace texplan::kernels {\nconst std::map<std::string, std::string>& sources() {\n  static const std::map<std::string, std::string> s = {\n")
foreach(f ${SOURCES})
  get_filename_component(n ${f} NAME)
  file(READ ${f} text)
  string(APPEND body "    {\"${n}\", R\"TEXPLANCL(${text})TEXPLANCL\"},\n")
endforeach()
string(APPEND body "  };\n  return s;\n}\n}  // namespace texplan::kernels\n")
file(WRITE ${OUT} "${body}")

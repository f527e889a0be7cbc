# SPDX-License-Identifier: Apache-2.0
# The modules and the layers the build enforces (docs/architecture.md).
#
# Each folder of src/ is a module, built as its own object library, trainmon_mod_<module>. A module's
# files are compiled with one include directory of their own, BUILD/layers/<module>, that holds
# links to its own headers and to those of the modules it may use, and to nothing else:
#   BUILD/layers/store/trainmon/core    -> include/trainmon/core       (public headers)
#   BUILD/layers/store/core             -> src/core                    (private headers, "core/x.h")
# (and those that they may use, in turn: all below) so that an include from a module that is not
# below fails to compile ("No such file"), not only
# the `layers.includes` test. The allowed dependencies are read from docs/architecture.md's
# "Allowed dependencies" table, the same table that test reads: the picture, the check and the
# build cannot drift apart. Each row of its "Known exceptions" table opens the one module it names
# (and what that module's headers include) to the one file it names (to a header's whole module
# when the file is a header); the list only shrinks (the test fails when an exception no longer
# occurs).

set(TRAINMON_LAYERS_DOC ${PROJECT_SOURCE_DIR}/docs/architecture.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TRAINMON_LAYERS_DOC})

# The cells of the rows of the first Markdown table after the heading `heading`, without its header
# row: each row as "cell1|cell2" in the list `out`.
function(trainmon_read_table text heading out)
  string(FIND "${text}" "${heading}" start)
  if(start LESS 0)
    message(FATAL_ERROR "${TRAINMON_LAYERS_DOC}: no section '${heading}'")
  endif()
  string(SUBSTRING "${text}" ${start} -1 rest)
  string(REPLACE ";" "," rest "${rest}")
  string(REPLACE "\n" ";" lines "${rest}")
  set(rows "")
  set(in_table FALSE)
  set(header_seen FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^\\|")
      set(in_table TRUE)
      if(line MATCHES "^\\|[-: |]+$")  # the separator row
        continue()
      endif()
      if(NOT header_seen)
        set(header_seen TRUE)
        continue()
      endif()
      string(REGEX MATCH "^\\|([^|]*)\\|([^|]*)\\|" m "${line}")
      string(STRIP "${CMAKE_MATCH_1}" c1)
      string(STRIP "${CMAKE_MATCH_2}" c2)
      string(REPLACE "`" "" c1 "${c1}")
      string(REPLACE "`" "" c2 "${c2}")
      list(APPEND rows "${c1}|${c2}")
    elseif(in_table)
      break()
    endif()
  endforeach()
  set(${out} "${rows}" PARENT_SCOPE)
endfunction()

file(READ ${TRAINMON_LAYERS_DOC} TRAINMON_LAYERS_TEXT)
trainmon_read_table("${TRAINMON_LAYERS_TEXT}" "## Allowed dependencies" TRAINMON_ALLOWED_ROWS)
trainmon_read_table("${TRAINMON_LAYERS_TEXT}" "## Known exceptions" TRAINMON_EXCEPTION_ROWS)
if(NOT TRAINMON_ALLOWED_ROWS)
  message(FATAL_ERROR "${TRAINMON_LAYERS_DOC}: the 'Allowed dependencies' table is empty")
endif()

set(TRAINMON_MODULES "")
foreach(row IN LISTS TRAINMON_ALLOWED_ROWS)
  string(REPLACE "|" ";" cells "${row}")
  list(GET cells 0 module)
  list(GET cells 1 deps)
  string(REGEX REPLACE "[, ]+" ";" deps "${deps}")
  list(REMOVE_ITEM deps "-" "")
  list(APPEND TRAINMON_MODULES ${module})
  set(TRAINMON_DEPS_${module} ${deps})
endforeach()

# BUILD/layers/<dir>/{trainmon/<m>, <m>} for each module m of `modules`: what one include directory
# shows.
function(trainmon_layer_dir dir)
  set(root ${PROJECT_BINARY_DIR}/layers/${dir})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root}/trainmon)
  foreach(m IN LISTS ARGN)
    if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/include/trainmon/${m})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/trainmon/${m} ${root}/trainmon/${m} SYMBOLIC)
    endif()
    if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${m})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${m} ${root}/${m} SYMBOLIC)
    endif()
  endforeach()
endfunction()

foreach(module IN LISTS TRAINMON_MODULES)
  foreach(dep IN LISTS TRAINMON_DEPS_${module})
    if(NOT dep IN_LIST TRAINMON_MODULES)
      message(FATAL_ERROR "${TRAINMON_LAYERS_DOC}: ${module} may include '${dep}', which is not a module of the table")
    endif()
  endforeach()
endforeach()
# What a module's files see: the modules it may include and, through their headers, what those may
# include (all on lower floors, so nothing upward becomes visible).
foreach(module IN LISTS TRAINMON_MODULES)
  set(seen ${module})
  set(todo ${TRAINMON_DEPS_${module}})
  while(todo)
    list(POP_FRONT todo dep)
    if(NOT dep IN_LIST seen)
      list(APPEND seen ${dep})
      list(APPEND todo ${TRAINMON_DEPS_${dep}})
    endif()
  endwhile()
  set(TRAINMON_VISIBLE_${module} ${seen})
  trainmon_layer_dir(${module} ${seen})
endforeach()

# Every src/<folder> must be a module of the table.
file(GLOB TRAINMON_SRC_ENTRIES LIST_DIRECTORIES true ${PROJECT_SOURCE_DIR}/src/*)
foreach(entry IN LISTS TRAINMON_SRC_ENTRIES)
  if(IS_DIRECTORY ${entry})
    get_filename_component(folder ${entry} NAME)
    if(NOT folder IN_LIST TRAINMON_MODULES)
      message(FATAL_ERROR "src/${folder} is not a module of ${TRAINMON_LAYERS_DOC}'s 'Allowed dependencies' table")
    endif()
  endif()
endforeach()

# The include directory that `module`'s files are compiled with.
function(trainmon_module_includes target module)
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/layers/${module})
endfunction()

# The known exceptions: (file, module it may include).
function(trainmon_apply_exceptions)
  foreach(row IN LISTS TRAINMON_EXCEPTION_ROWS)
    string(REPLACE "|" ";" cells "${row}")
    list(GET cells 0 file)
    list(GET cells 1 dep)
    set(grant ${PROJECT_BINARY_DIR}/layers/${dep})  # the module, and what its headers include
    if(file MATCHES "^src/([^/]+)/.*\\.(cpp|c)$")
      set_property(SOURCE ${PROJECT_SOURCE_DIR}/${file} APPEND PROPERTY INCLUDE_DIRECTORIES ${grant})
    elseif(file MATCHES "^(src|include/trainmon)/([^/]+)/")
      # A header: every file of its module, and of the modules that may include it, may include it.
      set(owner ${CMAKE_MATCH_2})
      foreach(m IN LISTS TRAINMON_MODULES)  # its own module too: a module sees itself
        if(owner IN_LIST TRAINMON_VISIBLE_${m} AND NOT dep IN_LIST TRAINMON_VISIBLE_${m} AND TARGET trainmon_mod_${m})
          target_include_directories(trainmon_mod_${m} PRIVATE ${grant})
        endif()
      endforeach()
    else()
      message(FATAL_ERROR "${TRAINMON_LAYERS_DOC}: exception for '${file}': not a file of a module")
    endif()
  endforeach()
endfunction()
